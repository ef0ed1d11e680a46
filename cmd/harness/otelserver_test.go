package main

import "testing"

func TestChatSpansNameTheModelsServer(t *testing.T) {
	cases := []struct {
		baseURL string
		host    string
		port    int
	}{
		{"", "api.openai.com", 443},
		{"https://api.example.com/v1", "api.example.com", 443},
		{"http://127.0.0.1:8089/v1", "127.0.0.1", 8089},
		{"http://[::1]:9000/v1", "::1", 9000},
		{"http://models.internal/v1", "models.internal", 80},
	}
	for _, c := range cases {
		t.Run(c.baseURL, func(t *testing.T) {
			if host, port := serverOf(c.baseURL); host != c.host || port != c.port {
				t.Errorf("serverOf(%q) = %s, %d; want %s, %d", c.baseURL, host, port, c.host, c.port)
			}
		})
	}
}
