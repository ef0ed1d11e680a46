package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/glidepath/glidepath/temporal/durable"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// DefaultDevAddress is where `dev` listens when --address is not given:
// the Temporal CLI's own default.
const DefaultDevAddress = "127.0.0.1:7233"

// DevNamespace is the namespace `dev` creates, the default of worker and
// run.
const DevNamespace = "default"

// DevTimerShift is the timer resolution of `dev`'s server
// (history.timerProcessorMaxTimeShift): a timer fires at most this late.
// A production server's default is 1s (docs/temporal.md).
const DevTimerShift = 10 * time.Millisecond

// devReady bounds how long dev waits for its server to answer for the
// namespace once started: a cold start on 2 busy cores takes seconds.
const devReady = time.Minute

// devCommand runs an embedded Temporal server for trying Glidepath on one
// machine (SPEC §9). It is built from the server's public packages, as
// the Temporal CLI's dev server is (temporaltest's server is in-memory
// and internal to its package, and the CLI cannot be built from the
// module proxy, issue 19): one process with the four services, their
// membership static, persistence and visibility in one SQLite file. The
// file is --db's, kept when dev stops, so that a run is still found after
// a restart (issue 26); without --db it is in a temporary folder made for
// this run and removed when dev stops. The namespace "default", with
// Glidepath's search attributes (durable.SearchAttributes), is written
// into the file before the server starts, when it is not there yet. The
// frontend listens on --address itself; the other services on free
// loopback ports. It prints the address and the file when the server
// answers for the namespace, and on ctx's end stops the server, removes
// the temporary folder and says so. What ends the process at once (a
// second Ctrl-C, SIGKILL, the server's own fatal errors) leaves the
// temporary folder in the temporary directory.
func devCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("address", DefaultDevAddress, "where the server's frontend listens, IP:PORT (port 0: a free one)")
	dbFile := fs.String("db", "", "the SQLite `file` that keeps the server's runs across restarts, created if absent (none: a temporary folder removed on exit)")
	if err := fs.Parse(args); err != nil {
		return parseError(err, "dev")
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q (try: harness-temporal dev --help)", fs.Arg(0))
	}
	ap, err := devAddress(*addr)
	if err != nil {
		return err
	}
	// The ports are taken here, so that one in use is bad usage with a
	// clear line before anything starts, and handed to the server just
	// before it binds them.
	ports, err := reservePorts(ap)
	if err != nil {
		return err
	}
	defer ports.release()
	db, kept, done, err := devDatabase(*dbFile, stdout, stderr)
	if err != nil {
		return err
	}
	ready := false
	defer func() { done(ready) }()
	srv, err := newDevServer(devConfig{ports: ports, db: db})
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return fmt.Errorf("dev: the server did not start: %w", err)
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(stderr, "harness-temporal dev: warning: stopping the server: %v\n", err)
		}
	}()
	if err := waitNamespace(ctx, ports.dial()); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	ready = true
	fmt.Fprintf(stdout, "harness-temporal dev: Temporal is ready at %s (namespace %s; data in %s, %s)\n", ports.frontend, DevNamespace, db, kept)
	<-ctx.Done()
	return nil
}

// devDatabase is the SQLite file dev keeps its data in: file, made
// absolute, or one in a new temporary folder when file is empty; kept
// says, for the ready line, what becomes of it on exit, and done, called
// once dev's server has stopped (ready: it had answered), removes the
// temporary folder and says what was kept or removed.
func devDatabase(file string, stdout, stderr io.Writer) (db, kept string, done func(ready bool), err error) {
	if file != "" {
		db, err := filepath.Abs(file)
		if err != nil {
			return "", "", nil, usage("--db %q: %v", file, err)
		}
		return db, "kept on exit", func(ready bool) {
			if ready {
				fmt.Fprintf(stdout, "harness-temporal dev: stopped; %s kept\n", db)
			}
		}, nil
	}
	dir, err := os.MkdirTemp("", "harness-temporal-dev-")
	if err != nil {
		return "", "", nil, fmt.Errorf("dev: a data folder: %w", err)
	}
	return filepath.Join(dir, "temporal.db"), "removed on exit", func(ready bool) {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(stderr, "harness-temporal dev: warning: the data folder %s was not removed: %v\n", dir, err)
			return
		}
		if ready {
			fmt.Fprintf(stdout, "harness-temporal dev: stopped; %s removed\n", dir)
		}
	}, nil
}

// devAddress reads --address: an IP or localhost, and a port.
func devAddress(s string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		why := err.Error()
		if ae, ok := errors.AsType[*net.AddrError](err); ok {
			why = ae.Err
		}
		return netip.AddrPort{}, usage("--address %q: %s: want IP:PORT, e.g. %s", s, why, DefaultDevAddress)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, usage("--address %q: %q is not an IP address: dev serves this machine, e.g. %s", s, host, DefaultDevAddress)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, usage("--address %q: %q is not a port (0 to 65535; 0 picks a free one)", s, port)
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}

// devPorts are the addresses of the dev server's services, each held by
// a listener until release.
type devPorts struct {
	frontend                  netip.AddrPort // as the frontend binds it
	history, matching, worker netip.AddrPort // free loopback ports
	held                      []net.Listener
}

// reservePorts listens on the frontend's address and on three free
// loopback ports for the other services.
func reservePorts(frontend netip.AddrPort) (*devPorts, error) {
	p := &devPorts{}
	l, err := net.Listen("tcp", frontend.String())
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EADDRINUSE) {
			hint = " (is a dev server running there already? --address 127.0.0.1:0 picks a free port)"
		}
		return nil, usage("--address %s: %v%s", frontend, err, hint)
	}
	p.held = append(p.held, l)
	// The IP as given (a wildcard 0.0.0.0 listens as [::] in Go), the port
	// as chosen when it was 0.
	p.frontend = netip.AddrPortFrom(frontend.Addr(), l.Addr().(*net.TCPAddr).AddrPort().Port())
	for _, to := range []*netip.AddrPort{&p.history, &p.matching, &p.worker} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.release()
			return nil, fmt.Errorf("dev: a free loopback port: %w", err)
		}
		p.held = append(p.held, l)
		*to = l.Addr().(*net.TCPAddr).AddrPort()
	}
	return p, nil
}

// release closes the listeners; a second call does nothing.
func (p *devPorts) release() {
	for _, l := range p.held {
		l.Close()
	}
	p.held = nil
}

// dial is the frontend's address for a client on this machine: its own,
// or loopback when it listens on every interface.
func (p *devPorts) dial() string {
	a := p.frontend.Addr()
	if a.IsUnspecified() {
		a = netip.MustParseAddr("127.0.0.1")
		if p.frontend.Addr().Is6() {
			a = netip.IPv6Loopback()
		}
	}
	return netip.AddrPortFrom(a, p.frontend.Port()).String()
}

type devConfig struct {
	ports *devPorts
	db    string // the SQLite file, given its schema here when it has none
}

// newDevServer writes the schema and the namespace into the SQLite file,
// unless it holds them already, and returns a server on it, not started,
// its services listening on the ports c holds (which it releases). The configuration is the one
// temporaltest's lite server and the Temporal CLI's dev server build,
// with static membership (no gossip ports) and no metrics or pprof
// listeners.
func newDevServer(c devConfig) (temporal.Server, error) {
	const clusterName = "active"
	sql := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: c.db,
		// rwc creates the file. WAL and synchronous=normal spare an fsync
		// per write: a process killed loses nothing, a power cut the last
		// writes (SPEC §9: a server for trying things, not a deployment).
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"},
	}
	if fi, err := os.Stat(c.db); err != nil || fi.Size() == 0 {
		if err := sqliteschema.SetupSchema(sql); err != nil {
			return nil, fmt.Errorf("dev: setting up the schema in %s: %w", c.db, err)
		}
	}
	// The search attributes are the namespace's when it is made, so a run
	// finds them at once; a namespace already there is left as it is
	// (CreateNamespaces skips it), and given those it lacks once the server
	// answers (waitNamespace).
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, DevNamespace, false, durable.SearchAttributes())
	if err != nil {
		return nil, fmt.Errorf("dev: the namespace %s: %w", DevNamespace, err)
	}
	if err := sqliteschema.CreateNamespaces(sql, ns); err != nil {
		return nil, fmt.Errorf("dev: creating the namespace %s: %w", DevNamespace, err)
	}
	p := c.ports
	front := p.dial()
	var cfg config.Config
	cfg.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: "127.0.0.1"}
	cfg.Persistence = config.Persistence{
		DefaultStore:     sqliteplugin.PluginName,
		VisibilityStore:  sqliteplugin.PluginName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sql}},
	}
	cfg.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: front},
		},
	}
	cfg.DCRedirectionPolicy.Policy = "noop"
	service := func(a netip.AddrPort) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: int(a.Port()), BindOnIP: a.Addr().String()}}
	}
	cfg.Services = map[string]config.Service{
		string(primitives.FrontendService): service(p.frontend),
		string(primitives.HistoryService):  service(p.history),
		string(primitives.MatchingService): service(p.matching),
		string(primitives.WorkerService):   service(p.worker),
	}
	cfg.Archival.History.State = "disabled"
	cfg.Archival.Visibility.State = "disabled"
	cfg.NamespaceDefaults.Archival.History.State = "disabled"
	cfg.NamespaceDefaults.Archival.Visibility.State = "disabled"
	cfg.PublicClient.HostPort = front

	// The server's own log: errors only, on stderr, so that dev's stdout
	// carries its one ready line.
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: "error", Format: "console"}))
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("dev: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("dev: %w", err)
	}
	// The services bind their ports while the server is built, so the
	// ports are let go just before.
	p.release()
	srv, err := temporal.NewServer(
		temporal.WithConfig(&cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static.SingleLocalHost(front),
			primitives.HistoryService:  static.SingleLocalHost(p.history.String()),
			primitives.MatchingService: static.SingleLocalHost(p.matching.String()),
			primitives.WorkerService:   static.SingleLocalHost(p.worker.String()),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		// Visibility at the CLI dev server's rate rather than 10 a second:
		// a person, a demo or a test listing runs while workers poll.
		// Timers that fire when due (DevTimerShift): the server's default
		// holds back every timer due within 1s of its creation until that
		// second has passed, so a 50ms backoff sleeps a second.
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
			dynamicconfig.TimerProcessorMaxTimeShift.Key():                   DevTimerShift,
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("dev: the server: %w", err)
	}
	return srv, nil
}

// waitNamespace waits until the server at hostPort describes the
// namespace dev created, and gives it those of Glidepath's search
// attributes it lacks (a file a server of another build made), within
// devReady.
func waitNamespace(ctx context.Context, hostPort string) error {
	wait, stop := context.WithTimeoutCause(ctx, devReady, errors.New("dev: the server did not answer within "+devReady.String()))
	defer stop()
	c, err := client.NewLazyClient(client.Options{HostPort: hostPort, Namespace: DevNamespace, Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	defer c.Close()
	for {
		_, err := c.WorkflowService().DescribeNamespace(wait, &workflowservice.DescribeNamespaceRequest{Namespace: DevNamespace})
		if err == nil {
			return durable.RegisterSearchAttributes(wait, c, DevNamespace)
		}
		select {
		case <-wait.Done():
			return fmt.Errorf("dev: the namespace %s is not served at %s: %w (%w)", DevNamespace, hostPort, context.Cause(wait), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
