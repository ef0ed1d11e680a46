package codec_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/temporal/codec"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, codec.KeySize) }

func mustCodec(t testing.TB, k []byte) *codec.AESGCM {
	t.Helper()
	c, err := codec.NewAESGCM(k)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func payload(t testing.TB, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAPayloadComesBackAsItWasAndIsNotInClearOnTheWay(t *testing.T) {
	c := mustCodec(t, key(1))
	in := []*commonpb.Payload{payload(t, "the task: sk-proj-0123456789abcdef"), payload(t, map[string]int{"units": 3})}
	enc, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range enc {
		if bytes.Contains(p.GetData(), []byte("sk-proj")) || bytes.Contains(p.GetData(), []byte("units")) {
			t.Errorf("payload %d is in clear: %q", i, p.GetData())
		}
		if got := string(p.GetMetadata()[converter.MetadataEncoding]); got != codec.Encoding {
			t.Errorf("payload %d: encoding %q, want %q", i, got, codec.Encoding)
		}
	}
	dec, err := c.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if !proto.Equal(dec[i], in[i]) {
			t.Errorf("payload %d: decoded %v, want %v", i, dec[i], in[i])
		}
	}
	again, err := c.Encode(in[:1])
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again[0].GetData(), enc[0].GetData()) {
		t.Error("the same payload encrypted twice gave the same bytes: the nonce is not fresh")
	}
}

func TestAPayloadThatWasNeverEncryptedIsDecodedAsItIs(t *testing.T) {
	c := mustCodec(t, key(1))
	plain := payload(t, "a run from before encryption was on")
	dec, err := c.Decode([]*commonpb.Payload{plain})
	if err != nil {
		t.Fatal(err)
	}
	if dec[0] != plain {
		t.Errorf("decoded %v, want the payload itself", dec[0])
	}
}

func TestAPayloadThatCannotBeDecryptedIsAnErrorThatSaysWhy(t *testing.T) {
	c := mustCodec(t, key(1))
	enc, err := c.Encode([]*commonpb.Payload{payload(t, "secret")})
	if err != nil {
		t.Fatal(err)
	}
	changed := func(f func(p *commonpb.Payload)) *commonpb.Payload {
		p := proto.Clone(enc[0]).(*commonpb.Payload)
		f(p)
		return p
	}
	other := mustCodec(t, key(2))
	for _, tc := range []struct {
		name  string
		c     *codec.AESGCM
		p     *commonpb.Payload
		is    error
		words []string
	}{
		{"a payload of another key names both keys", other, enc[0], codec.ErrKey, []string{c.KeyID(), other.KeyID()}},
		{"a payload whose data was changed is corrupt", c, changed(func(p *commonpb.Payload) { p.Data[len(p.Data)-1] ^= 1 }), codec.ErrCorrupt, nil},
		{"a payload shorter than a nonce is corrupt", c, changed(func(p *commonpb.Payload) { p.Data = p.Data[:3] }), codec.ErrCorrupt, []string{"shorter than a nonce"}},
		{"a payload passed off as another key's is refused", other, changed(func(p *commonpb.Payload) { p.Metadata[codec.KeyIDField] = []byte(other.KeyID()) }), codec.ErrCorrupt, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.c.Decode([]*commonpb.Payload{tc.p})
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want %v", err, tc.is)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestAKeyOfTheWrongSizeIsRefused(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33} {
		if _, err := codec.NewAESGCM(make([]byte, n)); !errors.Is(err, codec.ErrKey) {
			t.Errorf("%d bytes: error %v, want ErrKey", n, err)
		}
	}
}

func TestAKeyFileIsReadOrRefusedWithWhatToDo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	good := strings.Repeat("ab", codec.KeySize)
	for _, tc := range []struct {
		name string
		path string
		want string // "" : the key is read
	}{
		{"a key of 64 hex characters and a newline is read", write("good", good+"\n", 0o600), ""},
		{"a key others may read is refused", write("open", good, 0o644), "chmod 600"},
		{"a key that is not hex says how to make one", write("bad", "not a key", 0o600), "openssl rand -hex 32"},
		{"a key of 16 bytes is refused", write("short", good[:32], 0o600), "have 32 characters"},
		{"a missing file is refused", filepath.Join(dir, "none"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := codec.ReadKeyFile(tc.path)
			if tc.want == "" {
				if err != nil || len(k) != codec.KeySize || k[0] != 0xab {
					t.Fatalf("key %x, error %v", k, err)
				}
				return
			}
			if !errors.Is(err, codec.ErrKey) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrKey saying %q", err, tc.want)
			}
		})
	}
}

// Decode reads what the server hands back; whatever it holds, it is an
// error or a payload, never a panic.
func FuzzDecode(f *testing.F) {
	c := mustCodec(f, key(1))
	enc, err := c.Encode([]*commonpb.Payload{payload(f, "seed")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(enc[0].GetData(), []byte(c.KeyID()))
	f.Add([]byte{}, []byte(c.KeyID()))
	f.Fuzz(func(t *testing.T, data, id []byte) {
		p := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(codec.Encoding), codec.KeyIDField: id}, Data: data}
		out, err := c.Decode([]*commonpb.Payload{p})
		if err == nil && (len(out) != 1 || out[0] == nil) {
			t.Fatalf("no error and no payload: %v", out)
		}
	})
}

func TestAProcessWithNoKeySaysAPayloadIsEncryptedAndPassesTheRest(t *testing.T) {
	c := mustCodec(t, key(1))
	enc, err := c.Encode([]*commonpb.Payload{payload(t, "secret")})
	if err != nil {
		t.Fatal(err)
	}
	plain := payload(t, "in clear")
	if out, err := (codec.NoKey{}).Decode([]*commonpb.Payload{plain}); err != nil || out[0] != plain {
		t.Errorf("a plain payload: %v, %v", out, err)
	}
	_, err = (codec.NoKey{}).Decode([]*commonpb.Payload{plain, enc[0]})
	if !errors.Is(err, codec.ErrKey) || !strings.Contains(err.Error(), c.KeyID()) || !strings.Contains(err.Error(), "no key") {
		t.Errorf("an encrypted payload: error %v, want ErrKey naming key %s", err, c.KeyID())
	}
}
