// Command gangplan-place is the smallest front end: it reads a PlaceJobRequest (protobuf
// JSON: the cluster inline or a stored snapshot, and the job), asks a gangplan server where
// the pods go, and prints the bindings a scheduler would make, or why the gangs wait. A
// request file rather than flags, because it is what a front end has at hand: its cluster
// and job, in the same JSON any gRPC tool (grpcurl, protojson) reads and writes.
//
//	gangplan-place -addr 127.0.0.1:50051 -request testdata/request.json [-token T]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/status"
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
	if *path == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gangplan-place -request FILE [-addr HOST:PORT] [-token T] [-timeout D]")
		os.Exit(2)
	}
	if err := run(*addr, *path, *token, *timeout); err != nil {
		st, isStatus := status.FromError(err)
		if !isStatus {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "error: %s: %s\n", st.Code(), st.Message())
		for _, v := range gangplan.Violations(err) {
			if !strings.Contains(st.Message(), v.Field+": ") {
				fmt.Fprintf(os.Stderr, "  %s: %s\n", v.Field, v.Description)
			}
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
	gangOf := map[string]string{}
	for _, pod := range request.GetJob().GetPods() {
		gangOf[pod.GetNamespace()+"/"+pod.GetName()] = pod.GetGang()
	}
	why := map[string]string{}
	for _, g := range decision.GetGangs() {
		why[g.GetGang()] = g.GetReason()
	}
	// The bindings first; a pending pod's reason only when it is not its gang's (printed
	// once, below).
	var pending []string
	for _, p := range decision.GetPlacements() {
		switch gang := gangOf[p.GetPod()]; {
		case p.GetNode() != "" && p.GetCard() != "":
			fmt.Printf("bind %s -> %s (card %s)\n", p.GetPod(), p.GetNode(), p.GetCard())
		case p.GetNode() != "":
			fmt.Printf("bind %s -> %s\n", p.GetPod(), p.GetNode())
		case gang != "" && p.GetReason() == why[gang]:
			pending = append(pending, fmt.Sprintf("wait %s (gang %s)", p.GetPod(), gang))
		default:
			pending = append(pending, fmt.Sprintf("wait %s: %s", p.GetPod(), p.GetReason()))
		}
	}
	for _, line := range pending {
		fmt.Println(line)
	}
	for _, g := range decision.GetGangs() {
		if g.GetPlaced() {
			fmt.Printf("gang %s placed=true\n", g.GetGang())
		} else {
			fmt.Printf("gang %s placed=false: %s\n", g.GetGang(), g.GetReason())
		}
	}
	fmt.Printf("status %s, engine %s\n", decision.GetStatus(), decision.GetEngine())
	return nil
}
