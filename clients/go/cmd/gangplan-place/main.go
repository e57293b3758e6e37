// Command gangplan-place is the smallest front end: it reads a PlaceJobRequest (protobuf
// JSON: the cluster inline or a stored snapshot, and the job), asks a gangplan server where
// the pods go, and prints the bindings a scheduler would make, or why the gangs wait.
//
//	gangplan-place -addr 127.0.0.1:50051 -request testdata/request.json [-token T]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	gangplan "github.com/gangplan/gangplan/clients/go"
	pb "github.com/gangplan/gangplan/clients/go/gangplanv1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "the server, host:port")
	path := flag.String("request", "", "a PlaceJobRequest in protobuf JSON")
	token := flag.String("token", os.Getenv("GANGPLAN_TOKEN"), "bearer token (default $GANGPLAN_TOKEN)")
	timeout := flag.Duration("timeout", 10*time.Second, "the call's deadline")
	flag.Parse()
	if err := run(*addr, *path, *token, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		for _, v := range gangplan.Violations(err) {
			fmt.Fprintf(os.Stderr, "  %s: %s\n", v.Field, v.Description)
		}
		os.Exit(1)
	}
}

func run(addr, path, token string, timeout time.Duration) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	request := &pb.PlaceJobRequest{}
	if err := protojson.Unmarshal(raw, request); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	client, err := gangplan.Dial(addr, gangplan.Options{Token: token})
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	answer, err := client.PlaceJob(ctx, request)
	if err != nil {
		return err
	}
	decision := answer.GetDecision()
	for _, p := range decision.GetPlacements() {
		if p.GetNode() != "" {
			fmt.Printf("bind %s -> %s\n", p.GetPod(), p.GetNode())
		} else {
			fmt.Printf("wait %s: %s\n", p.GetPod(), p.GetReason())
		}
	}
	for _, g := range decision.GetGangs() {
		fmt.Printf("gang %s placed=%t %s\n", g.GetGang(), g.GetPlaced(), g.GetReason())
	}
	fmt.Printf("status %s, engine %s\n", decision.GetStatus(), decision.GetEngine())
	return nil
}
