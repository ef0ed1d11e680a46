package codec_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/glidepath/glidepath/temporal/codec"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// A client and the workers made from it encrypt every payload with one
// key: pass codec.Options's result to client.Dial. Here a payload goes
// through the data converter that installs, as the client's requests do.
func Example() {
	key := bytes.Repeat([]byte{0x42}, codec.KeySize) // in production: codec.ReadKeyFile
	c, err := codec.NewAESGCM(key)
	if err != nil {
		log.Fatal(err)
	}
	opts := codec.Options(client.Options{HostPort: "127.0.0.1:7233"}, c)

	p, err := opts.DataConverter.ToPayload("the task, in confidence")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(p.Metadata[converter.MetadataEncoding]), "under key", c.KeyID())
	fmt.Println("in clear:", bytes.Contains(p.Data, []byte("confidence")))
	var task string
	if err := opts.DataConverter.FromPayload(p, &task); err != nil {
		log.Fatal(err)
	}
	fmt.Println(task)
	// Output:
	// binary/glidepath-aes256gcm under key 425ed4e4
	// in clear: false
	// the task, in confidence
}
