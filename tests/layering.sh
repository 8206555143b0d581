#!/bin/bash
# Fails when a source file includes a project header from a folder above it in the module
# graph (README, "Layout"). Each folder may include its own headers and those of the folders
# listed for it here; nothing may include proxy/ except proxy/ and the tests.
# It also holds proxy/ to its shape: no .c over 800 lines, no function over 100.
set -u
cd "${1:-$(dirname "$0")/..}"
declare -A may=(
    [base]="base"
    [signing]="base signing"
    [ca]="base ca"
    [dns]="base dns"
    [addons]="base signing addons"
    [audit]="base signing addons audit"
    [proxy]="base signing ca dns addons audit proxy"
)
bad=0
for dir in "${!may[@]}"; do
    while IFS=: read -r file line inc; do
        target=${inc#*\"}; target=${target%%/*}
        case " ${may[$dir]} " in
            *" $target "*) ;;
            *) echo "layering: $file:$line includes $inc (above $dir/ in the graph)"; bad=1 ;;
        esac
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z]+/' \
                 "$dir"/*.c "$dir"/*.h "$dir"/*.cpp 2>/dev/null |
             sed -E 's/^([^:]+):([0-9]+):.*#[[:space:]]*include[[:space:]]+/\1:\2:/')
    # A bare "x.h" include must name a header of the same folder.
    while IFS=: read -r file line inc; do
        name=${inc//\"/}
        [ -e "$dir/$name" ] || { echo "layering: $file:$line includes $inc (not in $dir/)"; bad=1; }
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^/"]+"' \
                 "$dir"/*.c "$dir"/*.h "$dir"/*.cpp 2>/dev/null |
             sed -E 's/^([^:]+):([0-9]+):.*#[[:space:]]*include[[:space:]]+/\1:\2:/')
done
[ "$bad" -eq 0 ] && echo "layering: every include points down the graph"
# The shape of proxy/ (README, "Layout"): no file over 800 lines, no function over 100.
for f in proxy/*.c; do
    n=$(wc -l < "$f")
    [ "$n" -le 800 ] || { echo "layering: $f has $n lines (over 800)"; bad=1; }
    awk -v F="$f" '/^[a-z].*\(.*[^;]$/ { name = $0; start = NR }
        /^}/ && start { if (NR - start > 100) { print "layering: " F ":" start ": " name \
            " is " NR - start " lines (over 100)"; bad = 1 } start = 0 }
        END { exit bad }' "$f" || bad=1
done
exit "$bad"
