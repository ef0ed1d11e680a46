package main

import (
	"cmp"
	"flag"
	"fmt"
	"net/url"
	"os"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
)

// apiVar defines --api into p, the API a model is spoken to in, as
// harness run and harness serve both take it; what is what the API is
// of, its `API` the placeholder in the usage. [checkAPI] judges it.
func apiVar(fs *flag.FlagSet, p *string, what string) {
	fs.StringVar(p, "api", model.APIChat, what+": chat (Chat Completions) or responses (the Responses API)")
}

// checkAPI reports a bad --api as bad usage would say it.
func checkAPI(api string) error {
	if api != model.APIChat && api != model.APIResponses {
		return fmt.Errorf("--api %q: want chat or responses", api)
	}
	return nil
}

// modelSource makes the models of a run by name and API: --model's on
// --api, and those its sub-agents' entries name, all at --base-url with
// the one key, each made once. An entry that names an API but no model
// gets --model's name on that API, and one that names a model but no API
// gets --api (the tools file's agent fields model and api). sim is the
// embedded simulated model, served in memory, closed with the closers,
// whatever --base-url says: a sub-agent may run on it beside a parent on
// a real model.
type modelSource struct {
	name    string // --model: the name of an entry's model that names none
	baseURL string
	api     string // --api: the API of an entry's model that names none, model.Config.API
	closers *[]func() error
	made    map[modelKey]harness.Model
}

// A modelKey is a model as a run speaks to it: two APIs of one model
// name are two clients.
type modelKey struct{ name, api string }

// get returns the model called name on api, either of them empty for
// --model's or --api's. Everything that can be known to fail before a
// request is sent is refused here: a --base-url that is not an absolute
// http(s) URL, and OpenAI's own API with no key.
func (m *modelSource) get(name, api string) (harness.Model, error) {
	k := modelKey{cmp.Or(name, m.name), cmp.Or(api, m.api)}
	if c, ok := m.made[k]; ok {
		return c, nil
	}
	c, err := m.make(k)
	if err != nil {
		return nil, err
	}
	if m.made == nil {
		m.made = make(map[modelKey]harness.Model)
	}
	m.made[k] = c
	return c, nil
}

func (m *modelSource) make(k modelKey) (harness.Model, error) {
	if k.name == sim.ModelID {
		srv := sim.NewPipeServer(nil)
		*m.closers = append(*m.closers, func() error { srv.Close(); return nil })
		return model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID, API: k.api})
	}
	if m.baseURL != "" {
		u, err := url.Parse(m.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--base-url %q: want an absolute http or https URL, such as https://api.openai.com/v1", m.baseURL)
		}
	}
	key := os.Getenv("OPENAI_API_KEY")
	if key == "" && m.baseURL == "" && os.Getenv("OPENAI_BASE_URL") == "" {
		return nil, fmt.Errorf("model %s goes to OpenAI's API, which needs a key: set OPENAI_API_KEY, "+
			"or give --base-url for a server that needs none (or sim for the embedded model)", k.name)
	}
	return model.New(model.Config{BaseURL: m.baseURL, APIKey: key, Model: k.name, API: k.api})
}

// check makes the model of every sub-agent entry of tc that names a model
// or an API, so that a model that cannot be had is bad usage before the
// run starts, not a tool missing from it.
func (m *modelSource) check(tc *tools.Config) error {
	for _, c := range tc.Configs() {
		for _, e := range c.Entries {
			if e.Agent == nil || e.Agent.Model == "" && e.Agent.API == "" {
				continue
			}
			if _, err := m.get(e.Agent.Model, e.Agent.API); err != nil {
				return fmt.Errorf("%s:%d: agent %s: model: %w", c.File, e.Line, e.Name, err)
			}
		}
	}
	return nil
}
