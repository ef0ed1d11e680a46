package main

import (
	"fmt"
	"net/url"
	"os"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
)

// modelSource makes the models of a run by name: --model's, and those its
// sub-agents' entries name, all at --base-url with the one key, each made
// once. sim is the embedded simulated model, served in memory, closed with
// the closers, whatever --base-url says: a sub-agent may run on it beside
// a parent on a real model.
type modelSource struct {
	baseURL string
	api     string // the API they speak, model.Config.API
	closers *[]func() error
	made    map[string]harness.Model
}

// get returns the model called name. Everything that can be known to fail
// before a request is sent is refused here: a --base-url that is not an
// absolute http(s) URL, and OpenAI's own API with no key.
func (m *modelSource) get(name string) (harness.Model, error) {
	if c, ok := m.made[name]; ok {
		return c, nil
	}
	c, err := m.make(name)
	if err != nil {
		return nil, err
	}
	if m.made == nil {
		m.made = make(map[string]harness.Model)
	}
	m.made[name] = c
	return c, nil
}

func (m *modelSource) make(name string) (harness.Model, error) {
	if name == sim.ModelID {
		srv := sim.NewPipeServer(nil)
		*m.closers = append(*m.closers, func() error { srv.Close(); return nil })
		return model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID, API: m.api})
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
			"or give --base-url for a server that needs none (or sim for the embedded model)", name)
	}
	return model.New(model.Config{BaseURL: m.baseURL, APIKey: key, Model: name, API: m.api})
}

// check makes the model of every sub-agent entry of tc that names one, so
// that a model that cannot be had is bad usage before the run starts, not
// a tool missing from it.
func (m *modelSource) check(tc *tools.Config) error {
	for _, c := range tc.Configs() {
		for _, e := range c.Entries {
			if e.Agent == nil || e.Agent.Model == "" {
				continue
			}
			if _, err := m.get(e.Agent.Model); err != nil {
				return fmt.Errorf("%s:%d: agent %s: model: %w", c.File, e.Line, e.Name, err)
			}
		}
	}
	return nil
}
