package gangplan

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	pb "github.com/gangplan/gangplan/clients/go/gangplanv1"
)

// Options of a connection. The zero value dials without TLS or token, gives every call
// 10 seconds unless its context has a deadline, and retries the idempotent calls 3 times.
type Options struct {
	// Token is sent as `authorization: Bearer <token>` (the server's --token-file).
	Token string
	// TLS, when set, secures the connection (RootCAs for the server's CA, Certificates
	// for mTLS).
	TLS *tls.Config
	// Timeout applies to a call whose context has no deadline (0: 10 s).
	Timeout time.Duration
	// Retries is how many more attempts an idempotent call gets on Unavailable or
	// ResourceExhausted (0: 3; negative: none).
	Retries int
	// DialOptions are passed to grpc.Dial after the wrapper's own (interceptors,
	// keepalive, a custom dialer, ...).
	DialOptions []grpc.DialOption
}

// Client is a connection to a gangplan server. It is safe for concurrent use.
type Client struct {
	conn      *grpc.ClientConn
	placement pb.PlacementServiceClient
	health    healthpb.HealthClient
	timeout   time.Duration
	retries   int
}

// FieldViolation is one bad field of an InvalidArgument: its path, e.g.
// `cluster.nodes[3].allocatable["cpu"]`, and what is wrong.
type FieldViolation struct {
	Field       string
	Description string
}

type bearer struct {
	header string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": b.header}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

// Dial connects to target (host:port). The connection is made lazily, as grpc.Dial does.
func Dial(target string, opts Options) (*Client, error) {
	dial := []grpc.DialOption{}
	if opts.TLS != nil {
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(opts.TLS)))
	} else {
		dial = append(dial, grpc.WithInsecure())
	}
	if opts.Token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(bearer{"Bearer " + opts.Token, opts.TLS != nil}))
	}
	dial = append(dial, opts.DialOptions...)
	conn, err := grpc.Dial(target, dial...)
	if err != nil {
		return nil, err
	}
	c := &Client{
		conn:      conn,
		placement: pb.NewPlacementServiceClient(conn),
		health:    healthpb.NewHealthClient(conn),
		timeout:   opts.Timeout,
		retries:   opts.Retries,
	}
	if c.timeout <= 0 {
		c.timeout = 10 * time.Second
	}
	if c.retries == 0 {
		c.retries = 3
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Service is the generated stub, for options the wrapper does not expose.
func (c *Client) Service() pb.PlacementServiceClient { return c.placement }

func (c *Client) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

// idempotent runs a call that only reads, again on Unavailable or ResourceExhausted, with
// exponential backoff, while attempts and the deadline last. PlaceJob, Preempt, Enqueue,
// ValidateQueues, PlanCapacity, Why, Defragment and health only read (server/servicer.py solves on the
// stored generation and never stores the answer), so a repeat is harmless. Snapshot writes
// never come here: a repeated PutSnapshot whose first attempt landed bumps the generation
// again, a repeated UpdateSnapshot fails its expected_generation check or applies its
// delta twice, a repeated DeleteSnapshot answers NotFound. This is the policy the Python
// and Node.js clients give gRPC as a service config; here it is a loop because grpc-go
// before 1.40 (Debian's is 1.33) ignores retry policies unless GRPC_GO_RETRY=on.
func idempotent[T any](ctx context.Context, c *Client, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		answer, err := call(ctx)
		code := status.Code(err)
		if err == nil || attempt >= c.retries || (code != codes.Unavailable && code != codes.ResourceExhausted) {
			return answer, err
		}
		select {
		case <-ctx.Done():
			return answer, err
		case <-time.After(backoff):
		}
		if backoff *= 2; backoff > time.Second {
			backoff = time.Second
		}
	}
}

func once[T any](ctx context.Context, c *Client, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	return call(ctx)
}

// PutSnapshot stores a cluster under id ("" lets the server choose one).
func (c *Client) PutSnapshot(ctx context.Context, cluster *pb.Cluster, id string) (*pb.PutSnapshotResponse, error) {
	return once(ctx, c, func(ctx context.Context) (*pb.PutSnapshotResponse, error) {
		return c.placement.PutSnapshot(ctx, &pb.PutSnapshotRequest{Cluster: cluster, SnapshotId: id})
	})
}

// UpdateSnapshot applies a delta (pods added, removed, bound) to a stored snapshot.
func (c *Client) UpdateSnapshot(ctx context.Context, req *pb.UpdateSnapshotRequest) (*pb.UpdateSnapshotResponse, error) {
	return once(ctx, c, func(ctx context.Context) (*pb.UpdateSnapshotResponse, error) {
		return c.placement.UpdateSnapshot(ctx, req)
	})
}

// DeleteSnapshot forgets a stored snapshot.
func (c *Client) DeleteSnapshot(ctx context.Context, id string) error {
	_, err := once(ctx, c, func(ctx context.Context) (*pb.DeleteSnapshotResponse, error) {
		return c.placement.DeleteSnapshot(ctx, &pb.DeleteSnapshotRequest{SnapshotId: id})
	})
	return err
}

// PlaceJob answers where the job's pods go, or why its gangs stay pending.
func (c *Client) PlaceJob(ctx context.Context, req *pb.PlaceJobRequest) (*pb.PlaceJobResponse, error) {
	return idempotent(ctx, c, func(ctx context.Context) (*pb.PlaceJobResponse, error) {
		return c.placement.PlaceJob(ctx, req)
	})
}

// Preempt answers placements and the victims to evict for them.
func (c *Client) Preempt(ctx context.Context, req *pb.PreemptRequest) (*pb.PreemptResponse, error) {
	return idempotent(ctx, c, func(ctx context.Context) (*pb.PreemptResponse, error) {
		return c.placement.Preempt(ctx, req)
	})
}

// Enqueue answers whether the job's gangs may enter their queues.
func (c *Client) Enqueue(ctx context.Context, req *pb.EnqueueRequest) (*pb.EnqueueResponse, error) {
	return idempotent(ctx, c, func(ctx context.Context) (*pb.EnqueueResponse, error) {
		return c.placement.Enqueue(ctx, req)
	})
}

// ValidateQueues checks a queue tree against Volcano's admission rules.
func (c *Client) ValidateQueues(ctx context.Context, req *pb.ValidateQueuesRequest) (*pb.ValidateQueuesResponse, error) {
	return idempotent(ctx, c, func(ctx context.Context) (*pb.ValidateQueuesResponse, error) {
		return c.placement.ValidateQueues(ctx, req)
	})
}

// Why answers why a gang waits: its certificate, the smallest checked changes that would
// let it run and when it will start.
func (c *Client) Why(ctx context.Context, req *pb.WhyRequest) (*pb.WhyResponse, error) {
	return idempotent(ctx, c, func(ctx context.Context) (*pb.WhyResponse, error) {
		return c.placement.Why(ctx, req)
	})
}

// Defragment plans the moves of running pods that free whole nodes or topology domains
// (req.Goal), with the proven bound and the gap; nothing is moved. The call's deadline is
// the solver's time limit.
func (c *Client) Defragment(ctx context.Context, req *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	return idempotent(ctx, c, func(ctx context.Context) (*pb.DefragmentResponse, error) {
		return c.placement.Defragment(ctx, req)
	})
}

// PlanCapacity answers what to buy so a workload fits; the call's deadline is its time limit.
func (c *Client) PlanCapacity(ctx context.Context, req *pb.PlanCapacityRequest) (*pb.PlanCapacityResponse, error) {
	return idempotent(ctx, c, func(ctx context.Context) (*pb.PlanCapacityResponse, error) {
		return c.placement.PlanCapacity(ctx, req)
	})
}

// Health is SERVING, NOT_SERVING, ... of the whole server ("") or one service. It needs
// no token.
func (c *Client) Health(ctx context.Context, service string) (string, error) {
	answer, err := idempotent(ctx, c, func(ctx context.Context) (*healthpb.HealthCheckResponse, error) {
		return c.health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	})
	if err != nil {
		return "", err
	}
	return answer.GetStatus().String(), nil
}

// Violations lists the bad fields of an InvalidArgument error (nil for other errors).
func Violations(err error) []FieldViolation {
	var out []FieldViolation
	st, ok := status.FromError(err)
	if !ok || errors.Is(err, context.Canceled) {
		return nil
	}
	for _, detail := range st.Details() {
		if bad, ok := detail.(*errdetails.BadRequest); ok {
			for _, v := range bad.GetFieldViolations() {
				out = append(out, FieldViolation{Field: v.GetField(), Description: v.GetDescription()})
			}
		}
	}
	return out
}
