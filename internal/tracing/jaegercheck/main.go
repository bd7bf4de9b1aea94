// Command jaegercheck reads a replay's traces back from Jaeger's query API and checks what
// docs/tracing.md promises: one trace per replayed message, rooted at execute's replay span, with
// the consumer's delivery, claim, external calls and completion in it, linked to the publish
// batch of the job's trace and to the delivery that dead-lettered the event in the producer's
// trace; the shadow pass in a trace of its own; and no raw event ID or payload field on any span.
// scripts/traces.sh runs it; it exits 1 and says which promise broke.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/replayctl/replayctl/internal/tracing"
)

type span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	Logs []struct {
		Fields []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"fields"`
	} `json:"logs"`
	ProcessID string `json:"processID"`
	service   string
}

func (s span) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// parent is the span's CHILD_OF reference, "" for a root.
func (s span) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

type trace struct {
	TraceID   string `json:"traceID"`
	Spans     []span `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type checker struct {
	base     string
	forbid   []string
	problems []string
	checked  int
}

func (c *checker) fail(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *checker) get(path string, q url.Values) ([]trace, error) {
	resp, err := http.Get(c.base + path + "?" + q.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data []trace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	for i := range body.Data {
		for j := range body.Data[i].Spans {
			body.Data[i].Spans[j].service = body.Data[i].Processes[body.Data[i].Spans[j].ProcessID].ServiceName
		}
	}
	return body.Data, nil
}

func (c *checker) search(service, operation string) ([]trace, error) {
	return c.get("/api/traces", url.Values{"service": {service}, "operation": {operation}, "limit": {"1000"}, "lookback": {"1h"}})
}

func main() {
	base := flag.String("url", "http://127.0.0.1:16686", "Jaeger's query URL")
	job := flag.String("job", "", "the replayed job's ID")
	consumer := flag.String("consumer", "billing", "the consumer the job replays to")
	originals := flag.String("originals", "", "file of `event-ID trace-ID` lines: the trace each event's producer started")
	forbid := flag.String("forbid", "", "comma-separated strings no span attribute or event may contain (event IDs, payload values)")
	wait := flag.Duration("wait", 30*time.Second, "how long to wait for the traces to arrive")
	flag.Parse()
	c := &checker{base: strings.TrimSuffix(*base, "/"), forbid: strings.Split(*forbid, ",")}
	want, err := readOriginals(*originals)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jaegercheck:", err)
		os.Exit(2)
	}
	deadline := time.Now().Add(*wait)
	for {
		c.problems, c.checked = nil, 0
		if err := c.check(*job, *consumer, want); err != nil {
			c.fail("%v", err)
		}
		if len(c.problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if len(c.problems) > 0 {
		for _, p := range c.problems {
			fmt.Fprintln(os.Stderr, "jaegercheck: FAIL:", p)
		}
		os.Exit(1)
	}
	fmt.Printf("jaegercheck: %d replayed messages, one trace each, linked to their original deliveries and to the job; %d checks passed\n", len(want), c.checked)
}

func readOriginals(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-originals: %w", err)
	}
	byHash := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		event, traceID, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			return nil, fmt.Errorf("-originals %s: %q is not `event-ID trace-ID`", path, line)
		}
		byHash[tracing.EventIDHash(event)] = traceID
	}
	return byHash, nil
}

func (c *checker) check(job, consumer string, originals map[string]string) error {
	replays, err := c.search("replayctl", "replay "+consumer)
	if err != nil {
		return err
	}
	jobTraces, err := c.search("replayctl", "execute "+consumer)
	if err != nil {
		return err
	}
	batches := map[string]bool{}
	for _, t := range jobTraces {
		for _, s := range t.Spans {
			if s.OperationName == "publish batch" && s.tag("replayctl.job.id") == job {
				batches[s.SpanID] = true
			}
		}
	}
	c.expect(len(batches) > 0, "no `publish batch` span of job %s under an `execute %s` span", job, consumer)
	seen := map[string]bool{}
	for _, t := range replays {
		var root *span
		for i, s := range t.Spans {
			if s.OperationName == "replay "+consumer && s.parent() == "" && s.tag("replayctl.job.id") == job {
				root = &t.Spans[i]
			}
		}
		if root == nil {
			continue
		}
		hash := root.tag("replayctl.event_id.hash")
		c.expect(!seen[hash], "event %s has two replay traces", hash)
		seen[hash] = true
		c.replayTrace(t, *root, consumer, batches, originals[hash])
		c.clean(t)
	}
	c.expect(len(seen) == len(originals), "%d replay traces of job %s, want one per replayed message: %d", len(seen), job, len(originals))
	for hash := range originals {
		c.expect(seen[hash], "no replay trace for event %s", hash)
	}
	shadows, err := c.search("replayctl", "shadow "+consumer)
	if err != nil {
		return err
	}
	requests := 0
	for _, t := range shadows {
		ops := map[string]int{}
		for _, s := range t.Spans {
			ops[s.service+" "+s.OperationName]++
		}
		if ops["replayctl shadow request"] > 0 {
			requests += ops["replayctl shadow request"]
			c.expect(ops["billing-consumer shadow "+consumer] == ops["replayctl shadow request"],
				"shadow trace %s: %d requests but %d consumer shadow spans", t.TraceID, ops["replayctl shadow request"], ops["billing-consumer shadow "+consumer])
		}
		c.clean(t)
	}
	c.expect(requests >= len(originals), "the shadow pass has %d request spans, want at least %d", requests, len(originals))
	return nil
}

// replayTrace checks one replayed message's trace.
func (c *checker) replayTrace(t trace, root span, consumer string, batches map[string]bool, original string) {
	var toBatch, toOriginal bool
	for _, r := range root.References {
		if r.RefType != "FOLLOWS_FROM" {
			continue
		}
		toBatch = toBatch || batches[r.SpanID]
		if r.TraceID == original {
			toOriginal = true
			c.originalDelivery(r.TraceID, r.SpanID, consumer)
		}
	}
	c.expect(toBatch, "trace %s: the replay span is not linked to a publish batch of the job", t.TraceID)
	c.expect(toOriginal, "trace %s: the replay span is not linked to the producer's trace %s", t.TraceID, original)
	var deliver *span
	for i, s := range t.Spans {
		if s.OperationName == "deliver "+consumer && s.parent() == root.SpanID {
			deliver = &t.Spans[i]
		}
	}
	if !c.expect(deliver != nil, "trace %s: no `deliver %s` span under the replay span", t.TraceID, consumer) {
		return
	}
	c.expect(deliver.service == "billing-consumer", "trace %s: the delivery span comes from %q, want the consumer's own process", t.TraceID, deliver.service)
	c.expect(deliver.tag("replayctl.outcome") == "completed", "trace %s: delivery outcome %q, want completed", t.TraceID, deliver.tag("replayctl.outcome"))
	c.expect(deliver.tag("replayctl.event_id.hash") == root.tag("replayctl.event_id.hash"), "trace %s: the delivery names another event", t.TraceID)
	children := map[string]int{}
	for _, s := range t.Spans {
		if s.parent() == deliver.SpanID {
			children[s.OperationName]++
		}
	}
	for _, op := range []string{"claim", "effect payments.charge", "complete"} {
		c.expect(children[op] == 1, "trace %s: %d `%s` spans under the delivery, want 1", t.TraceID, children[op], op)
	}
}

// originalDelivery checks that the replay's link leads to the delivery that dead-lettered the
// event, in the producer's trace.
func (c *checker) originalDelivery(traceID, spanID, consumer string) {
	traces, err := c.get("/api/traces/"+traceID, nil)
	if err != nil || len(traces) == 0 {
		c.fail("the original trace %s is not in Jaeger: %v", traceID, err)
		return
	}
	c.clean(traces[0])
	for _, s := range traces[0].Spans {
		if s.SpanID == spanID {
			c.expect(s.OperationName == "deliver "+consumer && s.tag("replayctl.outcome") == "dead_lettered",
				"the replay's link leads to %q with outcome %q, want the dead-lettering `deliver %s`", s.OperationName, s.tag("replayctl.outcome"), consumer)
			return
		}
	}
	c.fail("the replay's link names span %s, which is not in the original trace %s", spanID, traceID)
}

// clean fails any span whose attributes or events carry one of the forbidden strings.
func (c *checker) clean(t trace) {
	for _, s := range t.Spans {
		values := []string{s.OperationName}
		for _, tag := range s.Tags {
			values = append(values, fmt.Sprint(tag.Value))
		}
		for _, l := range s.Logs {
			for _, f := range l.Fields {
				values = append(values, fmt.Sprint(f.Value))
			}
		}
		for _, v := range values {
			for _, f := range c.forbid {
				if f != "" && strings.Contains(v, f) {
					c.fail("span %s %q carries %q: %q", s.SpanID, s.OperationName, f, v)
				}
			}
		}
	}
	c.checked++
}

func (c *checker) expect(ok bool, format string, args ...any) bool {
	c.checked++
	if !ok {
		c.fail(format, args...)
	}
	return ok
}
