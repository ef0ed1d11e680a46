package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Encoding is the metadata encoding of a payload [AESGCM] encrypted.
const Encoding = "binary/glidepath-aes256gcm"

// KeyIDField is the metadata field that names the key a payload was
// encrypted under, by [AESGCM.KeyID].
const KeyIDField = "glidepath-key-id"

// KeySize is the size of an [AESGCM] key: AES-256.
const KeySize = 32

// ErrKey is matched by the error of a key that cannot be used, and of a
// payload encrypted under another key than this process's.
var ErrKey = errors.New("codec: key")

// ErrCorrupt is matched by the error of an encrypted payload that does
// not decrypt under the key it names: it was changed after it was
// encrypted.
var ErrCorrupt = errors.New("codec: payload does not decrypt")

// AESGCM is a [converter.PayloadCodec] that encrypts each payload whole
// (its metadata and data, as one protobuf) with AES-256-GCM. It is safe
// for concurrent use.
type AESGCM struct {
	aead cipher.AEAD
	id   string
}

// NewAESGCM returns the codec of key, which must be [KeySize] bytes.
func NewAESGCM(key []byte) (*AESGCM, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w: %d bytes, want %d (AES-256)", ErrKey, len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	sum := sha256.Sum256(key)
	return &AESGCM{aead: aead, id: hex.EncodeToString(sum[:4])}, nil
}

// KeyID names the codec's key without saying anything of it: the first 4
// bytes of its SHA-256, in hex. Each payload carries it, so that a
// process with another key says which it would need.
func (c *AESGCM) KeyID() string { return c.id }

// Encode encrypts each payload. The key's ID is authenticated with the
// data, so that a payload cannot be passed off as another key's.
func (c *AESGCM) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("codec: encode: %w", err)
		}
		nonce := make([]byte, c.aead.NonceSize(), c.aead.NonceSize()+len(plain)+c.aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("codec: encode: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(Encoding), KeyIDField: []byte(c.id)},
			Data:     c.aead.Seal(nonce, nonce, plain, []byte(c.id)),
		}
	}
	return out, nil
}

// Decode decrypts each payload this codec's key encrypted, and returns a
// payload that is not encrypted as it is.
func (c *AESGCM) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		if id := string(p.GetMetadata()[KeyIDField]); id != c.id {
			return nil, fmt.Errorf("%w: a payload was encrypted under key %s; this process has key %s", ErrKey, id, c.id)
		}
		data, ns := p.GetData(), c.aead.NonceSize()
		if len(data) < ns {
			return nil, fmt.Errorf("%w: %d bytes, shorter than a nonce", ErrCorrupt, len(data))
		}
		plain, err := c.aead.Open(nil, data[:ns], data[ns:], []byte(c.id))
		if err != nil {
			return nil, fmt.Errorf("%w under key %s: %v", ErrCorrupt, c.id, err)
		}
		out[i] = &commonpb.Payload{}
		if err := proto.Unmarshal(plain, out[i]); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	return out, nil
}

// Options returns o with payloads encoded by c: its data converter's (o's,
// else the SDK's default) and its failure converter's, which encodes a
// failure's message and stack trace as a payload too (a tool's error can
// quote what it read); a failure converter o had is replaced, since one
// that left messages in clear would defeat c. A worker made from the
// client has them.
func Options(o client.Options, c converter.PayloadCodec) client.Options {
	dc := o.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	o.DataConverter = converter.NewCodecDataConverter(dc, c)
	o.FailureConverter = temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter: o.DataConverter, EncodeCommonAttributes: true})
	return o
}

// NoKey is the codec of a process that has no key: it sends payloads as
// they are, and reads one that a process with a key encrypted as an
// error that says so, rather than as an encoding it does not know.
type NoKey struct{}

// Encode returns payloads as they are.
func (NoKey) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) { return payloads, nil }

// Decode returns payloads as they are, unless one is encrypted.
func (NoKey) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	for _, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) == Encoding {
			return nil, fmt.Errorf("%w: a payload was encrypted under key %s; this process has no key", ErrKey, p.GetMetadata()[KeyIDField])
		}
	}
	return payloads, nil
}
