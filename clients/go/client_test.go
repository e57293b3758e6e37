package gangplan_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	gangplan "github.com/gangplan/gangplan/clients/go"
	pb "github.com/gangplan/gangplan/clients/go/gangplanv1"
)

// The tests talk to a real `gangplan serve` on loopback ($GANGPLAN_BIN, else the
// checkout's .venv/bin/gangplan), started once for the package; the TLS tests start their own.
const token = "go-test-token"

var address string

func TestMain(m *testing.M) {
	addr, stop, err := startServer(nil, "GANGPLAN_TOKEN="+token)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	address = addr
	code := m.Run()
	stop()
	os.Exit(code)
}

// startServer runs `gangplan serve` on a free loopback port with extra flags and
// environment, and returns its address (from the "listening on" banner) and how to stop it.
func startServer(flags []string, env ...string) (string, func(), error) {
	bin := os.Getenv("GANGPLAN_BIN")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", ".venv", "bin", "gangplan"))
	}
	args := append([]string{"serve", "--host", "127.0.0.1", "--port", "0", "--metrics-port", "0"}, flags...)
	server := exec.Command(bin, args...)
	server.Env = append(append(os.Environ(), "GANGPLAN_LOG_LEVEL=WARNING"), env...)
	server.Stderr = os.Stderr
	out, err := server.StdoutPipe()
	if err == nil {
		err = server.Start()
	}
	if err != nil {
		return "", nil, fmt.Errorf("cannot start %s: %w", bin, err)
	}
	stop := func() {
		_ = server.Process.Signal(os.Interrupt)
		_ = server.Wait()
	}
	listening := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if match := listening.FindStringSubmatch(lines.Text()); match != nil {
			// Keep reading what else it prints, so a full pipe never blocks the server.
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return match[1], stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("%s %v exited without listening", bin, args)
}

func dial(t *testing.T, secret string) *gangplan.Client {
	t.Helper()
	c, err := gangplan.Dial(address, gangplan.Options{Token: secret, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func gpuNode(name string) *pb.Node {
	return &pb.Node{Name: name, Allocatable: map[string]int64{"cpu": 32000, "nvidia.com/gpu": 4, "pods": 110}}
}

func gangJob(name string, size int, gpus int64) *pb.Job {
	job := &pb.Job{Gangs: []*pb.Gang{{Namespace: "default", Name: name, MinMember: int32(size)}}}
	for i := 0; i < size; i++ {
		job.Pods = append(job.Pods, &pb.Pod{
			Namespace: "default", Name: fmt.Sprintf("%s-%d", name, i), Gang: "default/" + name,
			Requests: map[string]int64{"cpu": 1000, "nvidia.com/gpu": gpus},
		})
	}
	return job
}

func onSnapshot(id string) *pb.PlaceJobRequest_Snapshot {
	return &pb.PlaceJobRequest_Snapshot{Snapshot: &pb.SnapshotRef{Id: id}}
}

func TestPutSnapshotThenPlaceJobPlacesTheGang(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	put, err := c.PutSnapshot(ctx, &pb.Cluster{Nodes: []*pb.Node{gpuNode("n0"), gpuNode("n1")}}, "go")
	if err != nil || put.GetSnapshotId() != "go" || put.GetGeneration() != 1 {
		t.Fatalf("PutSnapshot: %v %v", put, err)
	}
	answer, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{ClusterSource: onSnapshot("go"), Job: gangJob("train", 2, 4)})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, p := range answer.GetDecision().GetPlacements() {
		nodes = append(nodes, p.GetNode())
	}
	sort.Strings(nodes)
	if !answer.GetPlaced() || fmt.Sprint(nodes) != "[n0 n1]" {
		t.Fatalf("placed=%t nodes=%v", answer.GetPlaced(), nodes)
	}
	big, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{ClusterSource: onSnapshot("go"), Job: gangJob("big", 3, 4)})
	if err != nil || big.GetPlaced() || !regexp.MustCompile(`Insufficient nvidia.com/gpu`).MatchString(big.GetDecision().GetGangs()[0].GetReason()) {
		t.Fatalf("an unschedulable gang is an answer with reasons: %v %v", big, err)
	}
	cert := big.GetDecision().GetCertificates()["default/big"]
	if !cert.GetProven() || (cert.GetKind() != "capacity" && cert.GetKind() != "pods") || !strings.HasPrefix(big.GetDecision().GetGangs()[0].GetReason(), cert.GetSentence()) {
		t.Fatalf("a proven certificate leads the reason: %v", cert)
	}
}

func TestInvalidInputNamesTheField(t *testing.T) {
	c := dial(t, token)
	_, err := c.PlaceJob(context.Background(), &pb.PlaceJobRequest{
		ClusterSource: &pb.PlaceJobRequest_Cluster{Cluster: &pb.Cluster{Nodes: []*pb.Node{{Name: ""}}}},
		Job:           gangJob("j", 1, 1),
	})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("want InvalidArgument, got %v", err)
	}
	violations := gangplan.Violations(err)
	if len(violations) != 1 || violations[0].Field != "cluster.nodes[0].name" {
		t.Fatalf("violations: %+v", violations)
	}
}

func TestTokenHealthAndDelete(t *testing.T) {
	ctx := context.Background()
	stranger := dial(t, "wrong")
	if _, err := stranger.PutSnapshot(ctx, &pb.Cluster{}, "x"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("want Unauthenticated, got %v", err)
	}
	if serving, err := stranger.Health(ctx, "gangplan.v1.PlacementService"); err != nil || serving != "SERVING" {
		t.Fatalf("health needs no token: %q %v", serving, err)
	}
	c := dial(t, token)
	if _, err := c.PutSnapshot(ctx, &pb.Cluster{Nodes: []*pb.Node{gpuNode("x0")}}, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSnapshot(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	_, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{ClusterSource: onSnapshot("gone"), Job: gangJob("j", 1, 1)})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("want NotFound, got %v", err)
	}
}

func TestWhyGivesTheCertificateAndTheChanges(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	answer, err := c.Why(ctx, &pb.WhyRequest{
		ClusterSource: onWhySnapshot("go"),
		Job:           gangJob("huge", 9, 4),
		Gang:          "default/huge",
	})
	if err != nil || answer.GetPlaced() || !answer.GetCertificate().GetProven() || len(answer.GetChanges()) == 0 {
		t.Fatalf("Why: %v %v", answer, err)
	}
	if answer.GetChanges()[0].GetKind() != "nodes" || answer.GetStart().GetText() == "" {
		t.Fatalf("Why: the changes and the start: %v", answer)
	}
}

func TestWhyReadsAPriorityClassRuntimeFromTheConf(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	created := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
	old := &pb.Pod{
		Namespace: "default", Name: "old", NodeName: "w0", PriorityClassName: "train",
		CreationTime: timestamppb.New(created),
		Requests:     map[string]int64{"cpu": 1000, "nvidia.com/gpu": 4},
	}
	conf := "expectedRuntime:\n  priorityClasses:\n    train: 3h\n" +
		"tiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"
	answer, err := c.Why(ctx, &pb.WhyRequest{
		ClusterSource: &pb.WhyRequest_Cluster{Cluster: &pb.Cluster{Nodes: []*pb.Node{gpuNode("w0")}, Pods: []*pb.Pod{old}}},
		Job:           gangJob("new", 1, 4),
		Gang:          "default/new",
		Now:           timestamppb.New(created.Add(time.Hour)),
		Options:       &pb.SolveOptions{SchedulerConf: conf},
	})
	if err != nil || answer.GetPlaced() {
		t.Fatalf("Why: %v %v", answer, err)
	}
	if at := answer.GetStart().GetAt().AsTime(); !at.Equal(created.Add(3 * time.Hour)) {
		t.Fatalf("Why: the start from the class's runtime: %v", answer.GetStart())
	}
}

func TestPlaceJobConsolidatesByMovingAPod(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	pods := []*pb.Pod{}
	for i, node := range []string{"m0", "m1"} {
		pods = append(pods, &pb.Pod{
			Namespace: "default", Name: fmt.Sprintf("run-%d", i), NodeName: node, Priority: 50,
			Requests: map[string]int64{"cpu": 1000, "nvidia.com/gpu": 2},
		})
	}
	answer, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{
		ClusterSource: &pb.PlaceJobRequest_Cluster{Cluster: &pb.Cluster{Nodes: []*pb.Node{gpuNode("m0"), gpuNode("m1")}, Pods: pods}},
		Job:           gangJob("big", 1, 3),
		Options:       &pb.SolveOptions{Consolidate: true, Workers: 1},
	})
	if err != nil || !answer.GetPlaced() {
		t.Fatalf("PlaceJob with consolidation: %v %v", answer, err)
	}
	moves := answer.GetDecision().GetMoves()
	if len(moves) != 1 || moves[0].GetPod() != "default/run-0" || moves[0].GetToNode() != "m1" {
		t.Fatalf("PlaceJob: the move: %v", moves)
	}
}

func TestWhyBuysTheCheapestNodeType(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	answer, err := c.Why(ctx, &pb.WhyRequest{
		ClusterSource: &pb.WhyRequest_Cluster{Cluster: &pb.Cluster{Nodes: []*pb.Node{gpuNode("k0")}}},
		Job:           gangJob("wide", 3, 4),
		Gang:          "default/wide",
		NodeTypes: []*pb.PlanNodeType{
			{Name: "gpu4", Cost: 10, Allocatable: map[string]int64{"cpu": 32000, "nvidia.com/gpu": 4}},
			{Name: "gpu8", Cost: 15, Allocatable: map[string]int64{"cpu": 32000, "nvidia.com/gpu": 8}},
		},
	})
	if err != nil {
		t.Fatalf("Why: %v", err)
	}
	for _, change := range answer.GetChanges() {
		if change.GetKind() == "nodes" && change.GetChange() != "+1 gpu8 node(s) (cost 15)" {
			t.Fatalf("Why: the nodes change: %v", change)
		}
	}
}

func TestDefragmentFreesTheEmptiestNode(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	busy, light := gpuNode("d0"), gpuNode("d1")
	pods := []*pb.Pod{}
	for i, node := range []string{"d0", "d0", "d0", "d1"} {
		pods = append(pods, &pb.Pod{
			Namespace: "default", Name: fmt.Sprintf("run-%d", i), NodeName: node,
			Requests: map[string]int64{"cpu": 1000, "nvidia.com/gpu": 1},
		})
	}
	maxPods := int32(1)
	answer, err := c.Defragment(ctx, &pb.DefragmentRequest{
		ClusterSource: &pb.DefragmentRequest_Cluster{Cluster: &pb.Cluster{Nodes: []*pb.Node{busy, light}, Pods: pods}},
		Goal:          &pb.DefragmentGoal{MaxPods: &maxPods},
		Options:       &pb.SolveOptions{Engine: "cpsat", Workers: 1},
	})
	if err != nil || len(answer.GetFreed()) != 1 || answer.GetFreed()[0] != "d1" || answer.GetStatus() != "OPTIMAL" {
		t.Fatalf("Defragment: %v %v", answer, err)
	}
	if len(answer.GetMoves()) != 1 || answer.GetMoves()[0].GetToNode() != "d0" {
		t.Fatalf("Defragment: the move: %v", answer.GetMoves())
	}
}

func onWhySnapshot(id string) *pb.WhyRequest_Snapshot {
	return &pb.WhyRequest_Snapshot{Snapshot: &pb.SnapshotRef{Id: id}}
}

func TestPlanCapacityAndValidateQueues(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	plan, err := c.PlanCapacity(ctx, &pb.PlanCapacityRequest{
		Workload:  gangJob("grow", 4, 4),
		NodeTypes: []*pb.PlanNodeType{{Name: "gpu4", Cost: 10, Allocatable: map[string]int64{"cpu": 32000, "nvidia.com/gpu": 4}}},
		Options:   &pb.SolveOptions{Workers: 1, Seed: 1},
	})
	if err != nil || plan.GetStatus() != "OPTIMAL" || len(plan.GetNodes()) != 1 || plan.GetNodes()[0].GetCount() != 4 {
		t.Fatalf("PlanCapacity: %v %v", plan, err)
	}
	queues, err := c.ValidateQueues(ctx, &pb.ValidateQueuesRequest{ClusterSource: &pb.ValidateQueuesRequest_Cluster{Cluster: &pb.Cluster{
		Queues: []*pb.Queue{
			{Name: "parent", Capability: map[string]int64{"cpu": 4000}},
			{Name: "child", Parent: "parent", Capability: map[string]int64{"cpu": 8000}},
		},
	}}})
	if err != nil || queues.GetValid() || queues.GetViolations()[0].GetQueue() != "child" {
		t.Fatalf("ValidateQueues: %v %v", queues, err)
	}
}

func TestTheModuleShipsItsProtos(t *testing.T) {
	for _, name := range []string{"cluster.proto", "placement_service.proto"} {
		text, err := gangplan.Protos.ReadFile("proto/gangplan/v1/" + name)
		if err != nil || !regexp.MustCompile(`package gangplan\.v1;`).Match(text) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func kaiQueue(name, parent string, gpuLimit float64) *pb.Queue {
	return &pb.Queue{Name: name, Parent: parent, Kai: &pb.KaiQueueResources{
		Quota:           map[string]float64{"nvidia.com/gpu": 0, "cpu": -1, "memory": -1},
		Limit:           map[string]float64{"nvidia.com/gpu": gpuLimit, "cpu": -1, "memory": -1},
		OverQuotaWeight: map[string]float64{"nvidia.com/gpu": 1, "cpu": 1, "memory": 1},
	}}
}

func TestKaiQueueLimitHoldsAGang(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	cluster := &pb.Cluster{
		Nodes:  []*pb.Node{gpuNode("n0"), gpuNode("n1")},
		Queues: []*pb.Queue{kaiQueue("dept", "", -1), kaiQueue("team", "dept", 4)},
	}
	if _, err := c.PutSnapshot(ctx, cluster, "go-kai"); err != nil {
		t.Fatal(err)
	}
	job := func(name string, size int) *pb.Job {
		j := gangJob(name, size, 4)
		j.Gangs[0].Queue = "team"
		return j
	}
	one, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{ClusterSource: onSnapshot("go-kai"), Job: job("one", 1)})
	if err != nil || !one.GetPlaced() {
		t.Fatalf("a gang within the limit runs: %v %v", one, err)
	}
	two, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{ClusterSource: onSnapshot("go-kai"), Job: job("two", 2)})
	if err != nil || two.GetPlaced() || !regexp.MustCompile(`queue team: .*limit`).MatchString(two.GetDecision().GetGangs()[0].GetReason()) {
		t.Fatalf("a gang over its KAI queue's limit waits, saying so: %v %v", two, err)
	}
}

// Kueue over gRPC: a ClusterQueue of 4 GPUs in the a100 flavor, a LocalQueue naming it;
// the answer names the flavor a placed gang was admitted with, and a gang over the quota
// waits with Kueue's reason.
func TestKueueClusterQueueAdmitsWithAFlavor(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	flavor := &pb.KueueFlavorQuotas{Name: "a100", Resources: []*pb.KueueResourceQuota{
		{Name: "cpu", NominalQuota: 64000}, {Name: "nvidia.com/gpu", NominalQuota: 4}}}
	cluster := &pb.Cluster{
		Nodes: []*pb.Node{gpuNode("n0"), gpuNode("n1")},
		Queues: []*pb.Queue{
			{Name: "team", Kueue: &pb.KueueQueue{Kind: "ClusterQueue", ResourceGroups: []*pb.KueueResourceGroup{
				{CoveredResources: []string{"cpu", "nvidia.com/gpu"}, Flavors: []*pb.KueueFlavorQuotas{flavor}}}}},
			{Name: "default/main", Parent: "team", Kueue: &pb.KueueQueue{Kind: "LocalQueue"}},
		},
	}
	if _, err := c.PutSnapshot(ctx, cluster, "go-kueue"); err != nil {
		t.Fatal(err)
	}
	job := func(name string, size int) *pb.Job {
		j := gangJob(name, size, 4)
		for _, p := range j.Pods {
			p.Labels = map[string]string{"kueue.x-k8s.io/queue-name": "main"}
		}
		return j
	}
	one, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{ClusterSource: onSnapshot("go-kueue"), Job: job("one", 1)})
	if err != nil || !one.GetPlaced() || one.GetDecision().GetFlavorAssignments()[0].GetFlavors()["nvidia.com/gpu"] != "a100" {
		t.Fatalf("a gang within the quota runs in flavor a100: %v %v", one, err)
	}
	two, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{ClusterSource: onSnapshot("go-kueue"), Job: job("two", 2)})
	if err != nil || two.GetPlaced() || !regexp.MustCompile(`insufficient quota for nvidia.com/gpu in flavor a100`).MatchString(two.GetDecision().GetGangs()[0].GetReason()) {
		t.Fatalf("a gang over its ClusterQueue's quota waits, saying so: %v %v", two, err)
	}
}

// Time-based fair share over gRPC: team "a" used 90% of the cluster's GPU-hours lately
// (KaiQueueResources.usage), so with usageDBConfig in the conf its share of the surplus
// shrinks (2 GPUs against 6) and team "b"'s gang goes first; by weight alone "a" would.
func TestKaiUsageLowersAQueuesShare(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	a, b := kaiQueue("a", "dept", -1), kaiQueue("b", "dept", -1)
	a.Kai.Usage = map[string]float64{"nvidia.com/gpu": 0.9}
	cluster := &pb.Cluster{
		Nodes:  []*pb.Node{gpuNode("n0"), gpuNode("n1")},
		Queues: []*pb.Queue{kaiQueue("dept", "", -1), a, b},
	}
	for _, name := range []string{"a", "b"} {
		j := gangJob("job-"+name, 3, 2)
		j.Gangs[0].Queue = name
		cluster.Gangs = append(cluster.Gangs, j.Gangs...)
		cluster.Pods = append(cluster.Pods, j.Pods...)
	}
	if _, err := c.PutSnapshot(ctx, cluster, "go-kai-usage"); err != nil {
		t.Fatal(err)
	}
	placed := func(conf string) string {
		answer, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{
			ClusterSource: onSnapshot("go-kai-usage"),
			Options:       &pb.SolveOptions{Engine: "greedy", SchedulerConf: conf},
		})
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, g := range answer.GetDecision().GetGangs() {
			if g.GetPlaced() {
				out += g.GetGang()
			}
		}
		return out
	}
	plain := "tiers: [{plugins: [{name: gang}, {name: predicates}]}]"
	if got := placed(plain); got != "default/job-a" {
		t.Fatalf("by weight alone the older queue's gang runs: %q", got)
	}
	if got := placed("usageDBConfig: {usageParams: {windowSize: 168h}}\n" + plain); got != "default/job-b" {
		t.Fatalf("with usage the less-used queue's gang runs: %q", got)
	}
}

// A PodDisruptionBudget allowing no eviction keeps Preempt from taking its pods when the
// conf lists the pdb plugin; without the budget one of them is the victim.
func TestDisruptionBudgetHoldsPreemption(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	cluster := &pb.Cluster{Nodes: []*pb.Node{{Name: "n0", Allocatable: map[string]int64{"cpu": 4000, "pods": 110}}}}
	for _, name := range []string{"a", "b"} {
		cluster.Pods = append(cluster.Pods, &pb.Pod{
			Namespace: "default", Name: name, NodeName: "n0", Priority: 1,
			Labels: map[string]string{"app": "web"}, Requests: map[string]int64{"cpu": 2000},
		})
	}
	urgent := &pb.Job{Pods: []*pb.Pod{{Namespace: "default", Name: "urgent", Priority: 100, Requests: map[string]int64{"cpu": 2000}}}}
	conf := "actions: 'enqueue, allocate, preempt'\ntiers: [{plugins: [{name: gang}, {name: predicates}, {name: pdb}]}]"
	victims := func(cl *pb.Cluster) int {
		answer, err := c.Preempt(ctx, &pb.PreemptRequest{
			ClusterSource: &pb.PreemptRequest_Cluster{Cluster: cl}, Job: urgent,
			Options: &pb.SolveOptions{Engine: "greedy", SchedulerConf: conf},
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(answer.GetDecision().GetVictims())
	}
	if got := victims(cluster); got != 1 {
		t.Fatalf("without a budget one pod is the victim: %d", got)
	}
	none := int32(0)
	cluster.DisruptionBudgets = []*pb.DisruptionBudget{{
		Name: "web", Selector: &pb.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, DisruptionsAllowed: &none,
	}}
	if got := victims(cluster); got != 0 {
		t.Fatalf("a budget allowing none keeps both pods: %d", got)
	}
}

// KAI sub-groups each in one rack of their own (Gang.TopologySubGroups): sub-group b's 3
// pods of 4 GPUs fit no rack of two 4-GPU nodes, so the gang waits naming b; without the
// sub-groups it is placed.
func TestTopologySubGroupsKeepEachInARack(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	cluster := &pb.Cluster{}
	for i := 0; i < 4; i++ {
		n := gpuNode(fmt.Sprintf("n%d", i))
		n.Labels = map[string]string{"zone": "z", "rack": fmt.Sprintf("r%d", i/2)}
		cluster.Nodes = append(cluster.Nodes, n)
	}
	job := gangJob("kai", 4, 4)
	for i, p := range job.Pods {
		leaf := "b"
		if i == 0 {
			leaf = "a"
		}
		p.Labels = map[string]string{"kai.scheduler/subgroup-name": leaf}
	}
	place := func() *pb.GangOutcome {
		answer, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{
			ClusterSource: &pb.PlaceJobRequest_Cluster{Cluster: cluster}, Job: job,
			Options: &pb.SolveOptions{Engine: "greedy"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return answer.GetDecision().GetGangs()[0]
	}
	if !place().GetPlaced() {
		t.Fatal("without sub-groups the gang is placed")
	}
	for _, leaf := range []string{"a", "b"} {
		job.Gangs[0].TopologySubGroups = append(job.Gangs[0].TopologySubGroups, &pb.TopologySubGroup{
			Name: leaf, Label: "kai.scheduler/subgroup-name", Values: []string{leaf}, Levels: []string{"zone", "rack"},
		})
	}
	if got := place(); got.GetPlaced() || !strings.Contains(got.GetReason(), "sub-group b") {
		t.Fatalf("sub-group b fits no rack: %v", got)
	}
}

// Volcano's minTaskMember (Gang.MinTaskMember): the master (8 GPUs) fits on no 4-GPU node,
// so with a minimum of one master the gang waits naming the task; without it, two workers
// meet minMember and are placed.
func TestMinTaskMemberKeepsAGangShortOfARoleWaiting(t *testing.T) {
	c, ctx := dial(t, token), context.Background()
	cluster := &pb.Cluster{Nodes: []*pb.Node{gpuNode("n0"), gpuNode("n1")}}
	job := gangJob("vc", 3, 4)
	job.Gangs[0].MinMember = 2
	for i, p := range job.Pods {
		role := "worker"
		if i == 0 {
			role = "master"
			p.Requests["nvidia.com/gpu"] = 8
		}
		p.Annotations = map[string]string{"volcano.sh/task-spec": role}
	}
	place := func() *pb.GangOutcome {
		answer, err := c.PlaceJob(ctx, &pb.PlaceJobRequest{
			ClusterSource: &pb.PlaceJobRequest_Cluster{Cluster: cluster}, Job: job,
			Options: &pb.SolveOptions{Engine: "greedy"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return answer.GetDecision().GetGangs()[0]
	}
	if !place().GetPlaced() {
		t.Fatal("without task minimums two workers meet minMember")
	}
	job.Gangs[0].MinTaskMember = map[string]int32{"master": 1, "worker": 1}
	if got := place(); got.GetPlaced() || !strings.Contains(got.GetReason(), "task master") {
		t.Fatalf("the master fits nowhere: %v", got)
	}
}
