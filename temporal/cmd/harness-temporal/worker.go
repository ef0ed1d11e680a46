package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/temporal/codec"
	"github.com/glidepath/glidepath/temporal/durable"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// DefaultTaskQueue is the task queue of `worker` and `run` when
// --task-queue is not given.
const DefaultTaskQueue = "glidepath"

// conn are the flags that say where the Temporal server is, and how
// payloads are encrypted on their way to it.
type conn struct {
	address, namespace, queue string
	keyFile                   string
	keyID                     string // the key's codec.AESGCM.KeyID once dialled; noKey without one
}

func (c *conn) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.address, "address", "", "the Temporal server's frontend, HOST:PORT (required)")
	fs.StringVar(&c.namespace, "namespace", "default", "the Temporal namespace")
	fs.StringVar(&c.queue, "task-queue", DefaultTaskQueue, "the task queue of the runs")
	c.keyFlag(fs)
}

// keyFlag is --encrypt-key: every command that reads or writes a run's
// payloads needs the key its workers have.
func (c *conn) keyFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.keyFile, "encrypt-key", "", "encrypt every payload (task, conversation, tool outputs, result) with the AES-256 key in this file, 64 hex characters; workers and runs of a namespace share it")
}

func (c *conn) dial(ctx context.Context) (client.Client, error) {
	if c.address == "" {
		return nil, usage("--address is required (try: harness-temporal dev, then --address 127.0.0.1:7233)")
	}
	o := client.Options{HostPort: c.address, Namespace: c.namespace, Logger: quietLogger{}}
	c.keyID = noKey
	if c.keyFile == "" {
		// A payload a worker with a key encrypted is an error that says so.
		o.DataConverter = converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec.NoKey{})
	} else {
		key, err := codec.ReadKeyFile(c.keyFile)
		if err != nil {
			return nil, usage("--encrypt-key: %v", err)
		}
		aes, err := codec.NewAESGCM(key)
		if err != nil {
			return nil, usage("--encrypt-key: %v", err)
		}
		o, c.keyID = codec.Options(o, aes), aes.KeyID()
	}
	cl, err := client.DialContext(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (to try one on this machine: harness-temporal dev --address %s): %w", c.address, c.address, err)
	}
	return cl, nil
}

func workerCommand(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c conn
	c.flags(fs)
	toolsFile := fs.String("tools", "", "the tools file (YAML or JSON) whose tools this worker runs; every worker of the task queue must run the same one")
	modelName := fs.String("model", "sim", "the model: sim (the embedded simulated model) or a name for --base-url")
	baseURL := fs.String("base-url", "", "an OpenAI-compatible server's base URL, e.g. http://127.0.0.1:8080/v1")
	api := fs.String("api", model.APIChat, "the model's `API`: chat (Chat Completions) or responses (the Responses API)")
	journal := fs.String("journal", "", "the orphan journal (default $XDG_STATE_HOME/glidepath/orphans.jsonl)")
	if err := fs.Parse(args); err != nil {
		return parseError(err, "worker")
	}
	if *api != model.APIChat && *api != model.APIResponses {
		return usage("--api %q: want chat or responses (try: harness-temporal worker --help)", *api)
	}
	mc, closeModel, err := modelConfig(*modelName, *baseURL)
	if err != nil {
		return err
	}
	defer closeModel()
	mc.API = *api
	acts := &durable.Activities{Model: mc}
	if *toolsFile != "" {
		reg, err := durable.LoadTools(ctx, *toolsFile, nil)
		if err != nil {
			return usage("%v", err)
		}
		defer reg.Close(context.WithoutCancel(ctx))
		acts.Tools = reg
	}
	j, err := openJournal(*journal)
	if err != nil {
		return usage("--journal: %v", err)
	}
	defer j.Close()
	acts.Journal = j
	cl, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	fp := acts.Tools.Fingerprint()
	if err := durable.CheckQueue(ctx, cl, c.queue, fp); errors.Is(err, durable.ErrOtherToolset) {
		return usage("%v", err)
	} else if err != nil {
		return err
	}
	if err := checkKeys(ctx, cl, c.queue, c.keyID); err != nil {
		return err
	}
	// What a refusal names, and what the next worker's CheckQueue and a
	// run's checkKeys read.
	acts.Identity = durable.Identity(fp) + keyMark + c.keyID
	// A worker of this build serves the runs this build started, and only
	// those (durable.Deployment): a run is never handed to a build that
	// cannot replay it.
	o := durable.Deployment(durable.WorkerOptions(worker.Options{Identity: acts.Identity}), c.queue)
	w := worker.New(cl, c.queue, o)
	w.RegisterWorkflowWithOptions(durable.Workflow, workflow.RegisterOptions{Name: durable.WorkflowName})
	acts.Register(w)
	// Run returns when the channel closes: on SIGINT or SIGTERM, or when
	// this build cannot be made current.
	stop := make(chan any)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { <-wctx.Done(); close(stop) }()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(stop) }()
	promoted := make(chan error, 1)
	go func() { promoted <- durable.Promote(wctx, cl, o.DeploymentOptions.Version) }()
	newRuns := "new runs come here"
	select {
	case err := <-ran: // stopped, or could not start
		return err
	case err := <-promoted:
		switch {
		case ctx.Err() != nil:
			return <-ran
		case errors.Is(err, durable.ErrNewerBuild):
			newRuns = "a newer build takes new runs; this one ends the runs it started"
		case err != nil:
			cancel()
			<-ran
			return err
		}
	}
	fmt.Fprintf(stderr, "harness-temporal worker: serving task queue %q of %s (namespace %s), toolset %s, build %s: %s\n",
		c.queue, c.address, c.namespace, fp.Label(), o.DeploymentOptions.Version.BuildID, newRuns)
	if *toolsFile == "" {
		fmt.Fprintln(stderr, "harness-temporal worker: no --tools: this worker serves runs without tools only; "+
			"every worker of the task queue must have none")
	}
	return <-ran
}

// modelConfig is the model the worker's activities call: the embedded sim,
// served in memory, or an OpenAI-compatible server. The returned func
// stops what it started.
func modelConfig(name, baseURL string) (model.Config, func(), error) {
	if name == "sim" && baseURL == "" {
		s := sim.NewPipeServer(nil)
		return model.Config{BaseURL: s.URL, Model: sim.ModelID, HTTPClient: s.Client()}, s.Close, nil
	}
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
			return model.Config{}, nil, usage("--base-url %q is not an absolute http(s) URL", baseURL)
		}
	}
	key := os.Getenv("OPENAI_API_KEY")
	if baseURL == "" && key == "" {
		return model.Config{}, nil, usage("model %q on OpenAI's API needs OPENAI_API_KEY", name)
	}
	return model.Config{BaseURL: baseURL, APIKey: key, Model: name, HTTPClient: &http.Client{}}, func() {}, nil
}

var errNoTask = errors.New("no task given")

// openJournal opens the orphan journal the worker appends to, as `harness
// run --journal` does.
func openJournal(path string) (*cancel.Journal, error) {
	if path == "" {
		p, err := cancel.DefaultJournalPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	return cancel.OpenJournal(path)
}
