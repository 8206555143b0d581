"""SigV4A key pairs and ECDSA through the AWS Common Runtime (Debian's python3-awscrt).

The Python binding of awscrt 0.16 signs requests (awscrt.auth.aws_sign_request, V4 and V4A,
headers and query) but exposes neither chunk signing nor verification nor the SigV4A key. Its
extension module links aws-c-auth and aws-c-cal statically and exports their C API, so this
module calls them through ctypes:
  aws_ecc_key_pair_new_ecdsa_p256_key_from_aws_credentials  (aws-c-auth key_derivation.c: the
      SigV4A KDF; checked below against aws-c-auth's own known-answer vector)
  aws_ecc_key_pair_sign_message / aws_ecc_key_pair_verify_signature  (aws-c-cal ECDSA P-256
      over a SHA-256 digest, DER signatures: what aws_verify_sigv4a_signing uses)
Nothing here reimplements SigV4A; airlock's signing/ code is not involved.
"""
import ctypes
import hashlib
from ctypes import POINTER, byref, c_int, c_size_t, c_uint64, c_void_p

import _awscrt

_lib = ctypes.CDLL(_awscrt.__file__)


class _Cursor(ctypes.Structure):  # struct aws_byte_cursor
    _fields_ = [("len", c_size_t), ("ptr", c_void_p)]


class _Buf(ctypes.Structure):  # struct aws_byte_buf
    _fields_ = [("len", c_size_t), ("buffer", c_void_p), ("capacity", c_size_t),
                ("allocator", c_void_p)]


def _proto(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_alloc = _proto("aws_default_allocator", c_void_p)()
_creds_new = _proto("aws_credentials_new", c_void_p, c_void_p, _Cursor, _Cursor, _Cursor,
                    c_uint64)
_creds_release = _proto("aws_credentials_release", None, c_void_p)
_kp_from_creds = _proto("aws_ecc_key_pair_new_ecdsa_p256_key_from_aws_credentials", c_void_p,
                        c_void_p, c_void_p)
_kp_release = _proto("aws_ecc_key_pair_release", None, c_void_p)
_kp_derive_pub = _proto("aws_ecc_key_pair_derive_public_key", c_int, c_void_p)
_kp_pub = _proto("aws_ecc_key_pair_get_public_key", None, c_void_p, POINTER(_Cursor),
                 POINTER(_Cursor))
_kp_sig_len = _proto("aws_ecc_key_pair_signature_length", c_size_t, c_void_p)
_kp_sign = _proto("aws_ecc_key_pair_sign_message", c_int, c_void_p, POINTER(_Cursor),
                  POINTER(_Buf))
_kp_verify = _proto("aws_ecc_key_pair_verify_signature", c_int, c_void_p, POINTER(_Cursor),
                    POINTER(_Cursor))
_buf_init = _proto("aws_byte_buf_init", c_int, POINTER(_Buf), c_void_p, c_size_t)
_buf_clean = _proto("aws_byte_buf_clean_up", None, POINTER(_Buf))


def _cursor(data):
    keep = ctypes.create_string_buffer(data, len(data))
    return _Cursor(len(data), ctypes.cast(keep, c_void_p).value), keep


class EccKey:
    """The SigV4A key pair aws-c-auth derives from (access key id, secret)."""

    def __init__(self, access_key_id, secret):
        a, ka = _cursor(access_key_id.encode())
        s, ks = _cursor(secret.encode())
        creds = _creds_new(_alloc, a, s, _Cursor(0, None), 2**64 - 1)
        if not creds:
            raise RuntimeError("aws_credentials_new failed")
        try:
            self._kp = _kp_from_creds(_alloc, creds)
        finally:
            _creds_release(creds)
        if not self._kp:
            raise RuntimeError("SigV4A key derivation failed")
        x, y = _Cursor(), _Cursor()
        _kp_pub(self._kp, byref(x), byref(y))
        if x.len == 0:
            if _kp_derive_pub(self._kp) != 0:
                raise RuntimeError("public key derivation failed")
            _kp_pub(self._kp, byref(x), byref(y))
        self.x = ctypes.string_at(x.ptr, x.len)
        self.y = ctypes.string_at(y.ptr, y.len)
        del ka, ks

    def __del__(self):
        if getattr(self, "_kp", None):
            _kp_release(self._kp)
            self._kp = None

    def sign_digest(self, digest):
        """DER ECDSA signature of a 32-byte digest."""
        m, keep = _cursor(digest)
        buf = _Buf()
        if _buf_init(byref(buf), _alloc, _kp_sig_len(self._kp)) != 0:
            raise MemoryError
        try:
            if _kp_sign(self._kp, byref(m), byref(buf)) != 0:
                raise RuntimeError("aws_ecc_key_pair_sign_message failed")
            return ctypes.string_at(buf.buffer, buf.len)
        finally:
            _buf_clean(byref(buf))

    def verify_digest(self, digest, der):
        m, k1 = _cursor(digest)
        s, k2 = _cursor(der)
        return _kp_verify(self._kp, byref(m), byref(s)) == 0

    def sign_sts(self, sts):
        """Lower-case hex DER signature of a string to sign (SHA-256 inside), as SigV4A wants."""
        return self.sign_digest(hashlib.sha256(sts.encode()).digest()).hex()

    def verify_sts(self, sts, sig_hex):
        try:
            der = bytes.fromhex(sig_hex.rstrip("*"))
        except ValueError:
            return False
        return self.verify_digest(hashlib.sha256(sts.encode()).digest(), der)


def self_test():
    """aws-c-auth's known answer (tests/key_derivation_tests.c) and a sign/verify round trip."""
    k = EccKey("AKISORANDOMAASORANDOM", "q+jcrXGc+0zWN6uzclKVhvMmUsIfRPa4rlRandom")
    assert k.x.hex() == "15d242ceebf8d8169fd6a8b5a746c41140414c3b07579038da06af89190fffcb", k.x.hex()
    assert k.y.hex() == "0515242cedd82e94799482e4c0514b505afccf2c0c98d6a553bf539f424c5ec0", k.y.hex()
    sig = k.sign_sts("hello")
    assert k.verify_sts("hello", sig) and not k.verify_sts("hellO", sig)


if __name__ == "__main__":
    self_test()
    print("aws_crt self test ok")
