// A TLS client on Java's default JSSE/PKIX (test_ca_constraints.sh): connects to IP:PORT with
// SNI and hostname NAME (HTTPS endpoint identification), trusting only CAFILE; prints OK, or
// REJECTED and the reason (exit 1).
import java.io.FileInputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

public class NcClient {
    public static void main(String[] a) throws Exception {
        String name = a[0], ip = a[1], cafile = a[3];
        int port = Integer.parseInt(a[2]);
        X509Certificate ca;
        try (FileInputStream in = new FileInputStream(cafile)) {
            ca = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
        KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
        ks.load(null, null);
        ks.setCertificateEntry("airlock-ca", ca);
        TrustManagerFactory tmf =
            TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        Socket raw = new Socket();
        raw.connect(new InetSocketAddress(ip, port), 10000);
        raw.setSoTimeout(10000);
        try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(raw, name, port, true)) {
            SSLParameters p = s.getSSLParameters();
            p.setEndpointIdentificationAlgorithm("HTTPS");
            s.setSSLParameters(p);
            s.startHandshake();
        } catch (javax.net.ssl.SSLException e) {
            Throwable c = e;
            while (c.getCause() != null) c = c.getCause();
            System.out.println("REJECTED: " + e.getMessage() + " / " + c);
            System.exit(1);
        }
        System.out.println("OK");
    }
}
