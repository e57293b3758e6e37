// Package gangplan is the Go client of gangplan's PlacementService: where a gang-scheduled
// job's pods should go, whom to evict, whether it may enter its queue, what to buy.
//
//	c, err := gangplan.Dial("127.0.0.1:50051", gangplan.Options{Token: "s3cret"})
//	if err != nil { ... }
//	defer c.Close()
//	_, err = c.PutSnapshot(ctx, &gangplanv1.Cluster{Nodes: nodes}, "prod")
//	answer, err := c.PlaceJob(ctx, &gangplanv1.PlaceJobRequest{
//		ClusterSource: &gangplanv1.PlaceJobRequest_Snapshot{Snapshot: &gangplanv1.SnapshotRef{Id: "prod"}},
//		Job:           job,
//	})
//
// The messages are the generated ones in package gangplanv1 (from proto/gangplan/v1, the
// same files the Python and Node.js clients use). Errors are gRPC status errors;
// Violations lists the field paths of an InvalidArgument.
//
// Every call gets Options.Timeout unless its context has a deadline. The calls that only
// read (PlaceJob, Preempt, Enqueue, ValidateQueues, PlanCapacity, Health) are retried on
// Unavailable and ResourceExhausted; the snapshot writes (PutSnapshot, UpdateSnapshot,
// DeleteSnapshot) are sent once, since a repeat of one that landed is not harmless.
package gangplan
