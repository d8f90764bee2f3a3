package executor

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/rpc/mtls"
	"github.com/drover-project/drover/internal/rpc/pb"
)

// tlsAuths are the driver's and the executors' mutual-TLS credentials of
// application app.
func tlsAuths(t *testing.T, app string) (driver, executor rpc.Auth) {
	t.Helper()
	ca, err := mtls.NewAuthority(app, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for role, a := range map[string]*rpc.Auth{mtls.RoleDriver: &driver, mtls.RoleExecutor: &executor} {
		b, err := ca.Issue(role)
		if err != nil {
			t.Fatal(err)
		}
		if *a, err = (rpc.Auth{}).WithTLS(b, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
	}
	return driver, executor
}

// TestOnlyTheDriverFetchesResults: another executor (any holder of the
// executors' certificate) that asks an executor for a kept result is
// refused and the result stays, for the driver to fetch.
func TestOnlyTheDriverFetchesResults(t *testing.T) {
	driver, executor := tlsAuths(t, "drover-results")
	e, err := newExecutor(Options{DriverURL: "x", ExecutorID: 1, Auth: executor})
	if err != nil {
		t.Fatal(err)
	}
	e.results[7] = []byte("result")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(rpc.ServerOptions(executor)...)
	pb.RegisterExecutorServer(s, e)
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()
	fetch := func(a rpc.Auth) (string, error) {
		conn, err := grpc.NewClient(lis.Addr().String(), rpc.DialOptions(a)...)
		if err != nil {
			return "", err
		}
		defer conn.Close()
		stream, err := pb.NewExecutorClient(conn).FetchResult(t.Context(), &pb.FetchResultRequest{TaskId: 7})
		if err != nil {
			return "", err
		}
		c, err := stream.Recv()
		return string(c.GetData()), err
	}
	if got, err := fetch(executor); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("an executor's certificate fetched %q, %v; want PermissionDenied", got, err)
	}
	if got, err := fetch(driver); err != nil || got != "result" {
		t.Fatalf("the driver fetched %q, %v; want the result, kept", got, err)
	}
}
