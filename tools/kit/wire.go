package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// The JSON shapes of SPEC §5.
type (
	manifest struct {
		Tools []manifestTool `json:"tools"`
	}
	manifestTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Effect      Effect          `json:"effect"`
		Cancellable bool            `json:"cancellable"`
		P50         int64           `json:"p50_ms"`
		P95         int64           `json:"p95_ms"`
		Agent       bool            `json:"agent,omitempty"`
	}
	result struct {
		Output json.RawMessage `json:"output"`
	}
	failure struct {
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
		Code      string `json:"code,omitempty"`
	}
	errorBody struct {
		Error failure `json:"error"`
	}
	callStatus struct {
		State  State           `json:"state"`
		Output json.RawMessage `json:"output,omitempty"`
		Units  int64           `json:"units"`
		Error  *failure        `json:"error,omitempty"`
	}
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		// A record's output comes from the Store, which may be another
		// process's and may hold what is not JSON: that is the server's
		// failure, not a reason to panic.
		status = http.StatusInternalServerError
		data, _ = json.Marshal(errorBody{Error: encodingFailure(err)})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// encodingFailure is the failure to answer with when an answer could not
// be encoded; it is a string, so its own encoding cannot fail.
func encodingFailure(err error) failure {
	return failure{Message: fmt.Sprintf("kit: encoding the answer: %v", err)}
}

func writeError(w http.ResponseWriter, status int, msg string, retryable bool) {
	writeJSON(w, status, errorBody{Error: failure{Message: msg, Retryable: retryable}})
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("kit: %s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, allow), false)
}

// serveTools answers GET /tools with the manifest.
func (s *Server) serveTools(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, r, http.MethodGet)
		return
	}
	s.mu.Lock()
	m := manifest{Tools: make([]manifestTool, 0, len(s.order))}
	for _, t := range s.order {
		m.Tools = append(m.Tools, manifestTool{
			Name:        t.Name,
			Description: t.Description,
			Parameters:  t.Parameters,
			Effect:      t.Effect,
			Cancellable: t.Cancellable,
			P50:         t.P50.Milliseconds(),
			P95:         t.P95.Milliseconds(),
			Agent:       t.Agent,
		})
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, m)
}

// serveTool answers POST /tools/{name}.
func (s *Server) serveTool(w http.ResponseWriter, r *http.Request) {
	t := s.tool(r.PathValue("name"))
	if t == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("kit: no tool named %q", r.PathValue("name")), false)
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, http.MethodPost)
		return
	}
	s.serveCall(w, r, t)
}

// serveCallRecord answers GET (status) and DELETE (cancel) of
// /tools/{name}/calls/{key}.
func (s *Server) serveCallRecord(w http.ResponseWriter, r *http.Request) {
	t := s.tool(r.PathValue("name"))
	if t == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("kit: no tool named %q", r.PathValue("name")), false)
		return
	}
	id := CallID{Tool: t.Name, Key: r.PathValue("key")}
	switch r.Method {
	case http.MethodGet:
		s.serveStatus(w, r, id)
	case http.MethodDelete:
		s.serveCancel(w, r, t, id)
	default:
		methodNotAllowed(w, r, "GET, DELETE")
	}
}

func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request, id CallID) {
	if units, ok := s.live(id); ok {
		writeJSON(w, http.StatusOK, callStatus{State: Running, Units: units})
		return
	}
	rec, ok, err := s.store.Get(r.Context(), id)
	switch {
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("kit: idempotency store: %v", err), true)
	case !ok:
		writeError(w, http.StatusNotFound, unknownCall(id), false)
	default:
		writeJSON(w, http.StatusOK, statusOf(rec))
	}
}

func statusOf(rec Record) callStatus {
	st := callStatus{State: rec.State, Units: rec.Units}
	switch rec.State {
	case Done:
		st.Output = rec.Output
	case Failed:
		st.Error = &failure{Message: rec.Message, Retryable: rec.Retryable, Code: rec.Code}
	}
	return st
}

func unknownCall(id CallID) string {
	return fmt.Sprintf("kit: tool %s received no call with Idempotency-Key %s", id.Tool, id.Key)
}

// serveCancel ends the handler's context of a call running here. A call
// that finished is accepted too, since cancelling is idempotent; one that
// runs in another process sharing the store cannot be reached from here.
func (s *Server) serveCancel(w http.ResponseWriter, r *http.Request, t *Tool, id CallID) {
	s.mu.Lock()
	ru := s.runs[id]
	s.mu.Unlock()
	var rec Record
	if ru == nil {
		var ok bool
		var err error
		rec, ok, err = s.store.Get(r.Context(), id)
		switch {
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("kit: idempotency store: %v", err), true)
			return
		case !ok:
			writeError(w, http.StatusNotFound, unknownCall(id), false)
			return
		}
	}
	switch {
	case !t.Cancellable:
		writeError(w, http.StatusConflict, fmt.Sprintf("kit: tool %s is not cancellable", t.Name), false)
	case ru != nil:
		ru.cancel(ErrCancelled)
		units, _ := s.live(id)
		writeJSON(w, http.StatusAccepted, callStatus{State: Running, Units: units})
	case rec.State == Running:
		writeError(w, http.StatusConflict, fmt.Sprintf("kit: the call with Idempotency-Key %s is running in another process", id.Key), true)
	default:
		writeJSON(w, http.StatusAccepted, statusOf(rec))
	}
}

// acceptsEventStream reports whether the request's Accept header names
// text/event-stream with a q above zero. Wildcards do not count: a client
// gets a stream only when it asks for one.
func acceptsEventStream(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(part)
			if err != nil || mt != "text/event-stream" {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

// A responder answers one call request: as JSON, or as an event stream
// when the client accepts one. A stream opens when the request starts
// following a run and from then on carries every answer as an event.
type responder struct {
	w      http.ResponseWriter
	sess   *sse.Session // nil: answer as JSON
	every  time.Duration
	timer  *time.Timer // keepalives; nil until the stream opens, or when disabled
	open   bool        // reports whether the stream's header was sent
	broken bool        // reports whether a write failed: the client is gone
	units  int64       // the last progress units sent
	sent   bool        // reports whether a progress event was sent
}

func newResponder(w http.ResponseWriter, r *http.Request, every time.Duration) *responder {
	rs := &responder{w: w, every: every}
	if acceptsEventStream(r.Header) {
		// A writer that cannot flush cannot stream: such a client gets
		// the JSON answer, which SPEC §5 also allows.
		if sess, err := sse.Upgrade(w, r); err == nil {
			rs.sess = sess
		}
	}
	return rs
}

func (rs *responder) stop() {
	if rs.timer != nil {
		rs.timer.Stop()
	}
}

func (rs *responder) openStream() {
	if rs.sess == nil || rs.open {
		return
	}
	rs.open = true
	h := rs.w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	// Flushing now sends the status and headers, so the caller knows the
	// call was accepted before the first event.
	if rs.sess.Flush() != nil {
		rs.broken = true
	}
	if rs.every > 0 {
		rs.timer = time.NewTimer(rs.every)
	}
}

func (rs *responder) send(m *sse.Message) {
	if rs.broken {
		return
	}
	if err := rs.sess.Send(m); err != nil || rs.sess.Flush() != nil {
		rs.broken = true
		return
	}
	if rs.timer != nil {
		rs.timer.Reset(rs.every)
	}
}

func (rs *responder) event(typ string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		// As in writeJSON: a stored output that is not JSON.
		typ = "error"
		data, _ = json.Marshal(encodingFailure(err))
	}
	m := &sse.Message{Type: sse.Type(typ)}
	m.AppendData(string(data))
	rs.send(m)
}

func (rs *responder) keepalive() {
	var m sse.Message
	m.AppendComment("keepalive")
	rs.send(&m)
}

// progress sends p unless its units are not above those already sent on
// this stream, which may have followed an earlier attempt: units strictly
// increase per stream.
func (rs *responder) progress(p progress, has bool) {
	if !has || rs.sent && p.Units <= rs.units {
		return
	}
	rs.sent, rs.units = true, p.Units
	rs.event("progress", p)
}

// follow streams ru's progress and keepalives until ru is done (true), or
// wait ends or the client is gone (false). As JSON it only waits.
func (rs *responder) follow(wait context.Context, ru *run) bool {
	rs.openStream()
	for {
		var changed <-chan struct{}
		var tick <-chan time.Time
		if rs.open {
			var p progress
			var has bool
			p, has, changed = ru.latest()
			rs.progress(p, has)
			if rs.timer != nil {
				tick = rs.timer.C
			}
		}
		if rs.broken {
			return false
		}
		select {
		case <-ru.done:
			if rs.open {
				// The last report may have come just before the end.
				p, has, _ := ru.latest()
				rs.progress(p, has)
			}
			return true
		case <-changed:
		case <-tick:
			rs.keepalive()
		case <-wait.Done():
			return false
		}
	}
}

// answer sends a call's outcome: a result or error event on a stream,
// otherwise 200 with the output, or an error status: 503 when the failure
// is retryable, 422 when it is not.
func (rs *responder) answer(rec Record) {
	if rs.sess != nil {
		rs.openStream()
		if rec.State == Done {
			rs.event("result", result{Output: rec.Output})
		} else {
			rs.event("error", failure{Message: rec.Message, Retryable: rec.Retryable, Code: rec.Code})
		}
		return
	}
	switch {
	case rec.State == Done:
		writeJSON(rs.w, http.StatusOK, result{Output: rec.Output})
	case rec.Code == CodeDeadline:
		writeJSON(rs.w, http.StatusGatewayTimeout, errorBody{Error: failure{Message: rec.Message, Retryable: rec.Retryable, Code: rec.Code}})
	case rec.Retryable:
		writeError(rs.w, http.StatusServiceUnavailable, rec.Message, true)
	default:
		writeError(rs.w, http.StatusUnprocessableEntity, rec.Message, false)
	}
}

// fail answers with an error that is not a call's outcome: an HTTP error,
// or an error event once the stream is open.
func (rs *responder) fail(status int, msg string, retryable bool) {
	if rs.open {
		rs.event("error", failure{Message: msg, Retryable: retryable})
		return
	}
	writeError(rs.w, status, msg, retryable)
}
