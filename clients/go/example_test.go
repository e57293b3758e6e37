package gangplan_test

import (
	"context"
	"fmt"
	"log"

	gangplan "github.com/gangplan/gangplan/clients/go"
	pb "github.com/gangplan/gangplan/clients/go/gangplanv1"
)

// Store the cluster once, then ask where a two-pod gang goes. (Compiled by `go vet` and
// `go test`, not run: it needs a server on :50051; the README shows the same code.)
func ExampleDial() {
	c, err := gangplan.Dial("127.0.0.1:50051", gangplan.Options{Token: "s3cret"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	node := func(name string) *pb.Node {
		return &pb.Node{Name: name, Allocatable: map[string]int64{"cpu": 32000, "nvidia.com/gpu": 4, "pods": 110}}
	}
	if _, err := c.PutSnapshot(ctx, &pb.Cluster{Nodes: []*pb.Node{node("gpu-a"), node("gpu-b")}}, "prod"); err != nil {
		log.Fatal(err)
	}
	job := &pb.Job{Gangs: []*pb.Gang{{Namespace: "default", Name: "train", MinMember: 2}}}
	for _, name := range []string{"train-0", "train-1"} {
		job.Pods = append(job.Pods, &pb.Pod{Namespace: "default", Name: name, Gang: "default/train",
			Requests: map[string]int64{"cpu": 1000, "nvidia.com/gpu": 4}})
	}
	answer, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{
		ClusterSource: &pb.PlaceJobRequest_Snapshot{Snapshot: &pb.SnapshotRef{Id: "prod"}},
		Job:           job,
	})
	if err != nil {
		log.Fatal(err) // an InvalidArgument's fields: gangplan.Violations(err)
	}
	for _, p := range answer.GetDecision().GetPlacements() {
		fmt.Println(p.GetPod(), "->", p.GetNode())
	}
}
