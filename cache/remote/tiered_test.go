package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"

	"github.com/ptojit/ptojit/cache"
)

// TestTieredPublishesHeldBlobs: a Badger store does not read an output
// whose blob it holds already, so the bytes Tiered.Put publishes to the
// tiers must not come from what the local store read: an entry whose
// output another entry stored first reaches the tier whole.
func TestTieredPublishesHeldBlobs(t *testing.T) {
	ctx := context.Background()
	local, err := cache.Open(t.TempDir(), cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	blob := bytes.Repeat([]byte("a unit's object "), 4096)
	first, data := keyedEntry(blob)
	if err := local.Put(ctx, first, cache.Readers(data...)); err != nil {
		t.Fatal(err)
	}
	tier := cache.NewMemory(cache.Options{})
	second, data := keyedEntry(blob, []byte("the request's callable"))
	second.Record = append(second.Record, " and a callable"...)
	second.Key = sha256.Sum256(second.Record)
	if err := ChainOf(tier).Over(local, false).Put(ctx, second, cache.Readers(data...)); err != nil {
		t.Fatal(err)
	}
	h, err := tier.Get(ctx, second.Key)
	if err != nil {
		t.Fatalf("the tier: %v", err)
	}
	got, err := h.ReadAll()
	if err != nil {
		t.Fatalf("the tier's copy: %v", err)
	}
	if !bytes.Equal(got[0], blob) || string(got[1]) != "the request's callable" {
		t.Errorf("the tier holds %d and %d bytes, want the %d-byte object and the callable", len(got[0]), len(got[1]), len(blob))
	}
}
