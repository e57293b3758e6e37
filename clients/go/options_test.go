package gangplan_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gangplan "github.com/gangplan/gangplan/clients/go"
	pb "github.com/gangplan/gangplan/clients/go/gangplanv1"
)

// certificate is a key and its certificate signed by parent (self-signed when parent is nil).
type certificate struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	der  []byte
}

func issue(t *testing.T, name string, parent *certificate, usage x509.ExtKeyUsage) *certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	signer, signerKey := template, key
	if parent == nil {
		template.IsCA, template.BasicConstraintsValid = true, true
	} else {
		template.ExtKeyUsage = []x509.ExtKeyUsage{usage}
		template.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &certificate{key: key, cert: cert, der: der}
}

func (c *certificate) writePEM(t *testing.T, dir, name string) (certPath, keyPath string) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	for path, block := range map[string]*pem.Block{certPath: {Type: "CERTIFICATE", Bytes: c.der}, keyPath: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certPath, keyPath
}

func (c *certificate) tlsCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.der}, PrivateKey: c.key, Leaf: c.cert}
}

// A server with its certificate and mutual TLS (--client-ca): Options.TLS with the CA and a
// client certificate reaches it, the token travels over TLS, and without a client
// certificate the handshake fails.
func TestMutualTLSWithToken(t *testing.T) {
	dir := t.TempDir()
	ca := issue(t, "gangplan test CA", nil, 0)
	caPath, _ := ca.writePEM(t, dir, "ca")
	serverCert, serverKey := issue(t, "127.0.0.1", ca, x509.ExtKeyUsageServerAuth).writePEM(t, dir, "server")
	client := issue(t, "go client", ca, x509.ExtKeyUsageClientAuth)
	addr, stop, err := startServer(
		[]string{"--tls-cert", serverCert, "--tls-key", serverKey, "--client-ca", caPath},
		"GANGPLAN_TOKEN="+token,
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	ctx := context.Background()

	secured, err := gangplan.Dial(addr, gangplan.Options{Token: token, Timeout: 30 * time.Second, TLS: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{client.tlsCertificate()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer secured.Close()
	if serving, err := secured.Health(ctx, ""); err != nil || serving != "SERVING" {
		t.Fatalf("health over mutual TLS: %q %v", serving, err)
	}
	put, err := secured.PutSnapshot(ctx, &pb.Cluster{Nodes: []*pb.Node{gpuNode("t0")}}, "tls")
	if err != nil || put.GetGeneration() != 1 {
		t.Fatalf("PutSnapshot over mutual TLS: %v %v", put, err)
	}

	anonymous, err := gangplan.Dial(addr, gangplan.Options{Token: token, Retries: -1, TLS: &tls.Config{RootCAs: roots}})
	if err != nil {
		t.Fatal(err)
	}
	defer anonymous.Close()
	if _, err := anonymous.Health(ctx, ""); status.Code(err) != codes.Unavailable {
		t.Fatalf("want Unavailable without a client certificate, got %v", err)
	}
}

// attempts counts the calls that leave the client, by method, and keeps the last deadline.
type attempts struct {
	calls    map[string]int
	deadline time.Time
}

func (a *attempts) option() grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply interface{}, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		a.calls[filepath.Base(method)]++
		a.deadline, _ = ctx.Deadline()
		return invoker(ctx, method, req, reply, cc, opts...)
	})
}

// An address where nothing listens: every attempt fails with Unavailable at once.
func deadAddress(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := listener.Addr().String()
	_ = listener.Close()
	return addr
}

func TestOnlyReadsAreRetried(t *testing.T) {
	counted := &attempts{calls: map[string]int{}}
	c, err := gangplan.Dial(deadAddress(t), gangplan.Options{Retries: 2, DialOptions: []grpc.DialOption{counted.option()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	reads := map[string]func() error{
		"PlaceJob":       func() error { _, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{}); return err },
		"Preempt":        func() error { _, err := c.Preempt(ctx, &pb.PreemptRequest{}); return err },
		"Enqueue":        func() error { _, err := c.Enqueue(ctx, &pb.EnqueueRequest{}); return err },
		"ValidateQueues": func() error { _, err := c.ValidateQueues(ctx, &pb.ValidateQueuesRequest{}); return err },
		"PlanCapacity":   func() error { _, err := c.PlanCapacity(ctx, &pb.PlanCapacityRequest{}); return err },
		"Check":          func() error { _, err := c.Health(ctx, ""); return err },
	}
	writes := map[string]func() error{
		"PutSnapshot":    func() error { _, err := c.PutSnapshot(ctx, &pb.Cluster{}, "w"); return err },
		"UpdateSnapshot": func() error { _, err := c.UpdateSnapshot(ctx, &pb.UpdateSnapshotRequest{}); return err },
		"DeleteSnapshot": func() error { return c.DeleteSnapshot(ctx, "w") },
	}
	for want, calls := range map[int]map[string]func() error{3: reads, 1: writes} {
		for method, call := range calls {
			if err := call(); status.Code(err) != codes.Unavailable {
				t.Fatalf("%s: want Unavailable, got %v", method, err)
			}
			if counted.calls[method] != want {
				t.Errorf("%s: %d attempts, want %d", method, counted.calls[method], want)
			}
		}
	}

	once, err := gangplan.Dial(deadAddress(t), gangplan.Options{Retries: -1, DialOptions: []grpc.DialOption{counted.option()}})
	if err != nil {
		t.Fatal(err)
	}
	defer once.Close()
	counted.calls = map[string]int{}
	if _, err := once.PlaceJob(ctx, &pb.PlaceJobRequest{}); status.Code(err) != codes.Unavailable || counted.calls["PlaceJob"] != 1 {
		t.Fatalf("Retries -1: %d attempts, %v", counted.calls["PlaceJob"], err)
	}
}

func TestDeadlines(t *testing.T) {
	counted := &attempts{calls: map[string]int{}}
	c, err := gangplan.Dial(address, gangplan.Options{Token: token, Timeout: 7 * time.Second, DialOptions: []grpc.DialOption{counted.option()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := time.Now()
	if _, err := c.Health(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if left := counted.deadline.Sub(before); left < 6*time.Second || left > 8*time.Second {
		t.Fatalf("a call without a deadline gets Options.Timeout (7s), got %v", left)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, err := c.Health(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(counted.deadline); left < 59*time.Minute {
		t.Fatalf("the caller's deadline wins over Options.Timeout, got %v", left)
	}
	expired, cancelExpired := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancelExpired()
	time.Sleep(time.Millisecond)
	if _, err := c.PlaceJob(expired, &pb.PlaceJobRequest{}); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
}
