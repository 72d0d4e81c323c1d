package jit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
	"github.com/ptojit/ptojit/registry"
)

// PackKind is the kind meta of a pack entry.
const PackKind = "pack"

// packs counts the callables packed in this process.
var packs atomic.Int64

// packed returns the outputs of a request miss whose units compiled to
// res: the objects and the callable its pack entry holds, else a fresh
// pack and the pack entry to store once the request's outputs were
// published (putPack). In verify mode it always packs and
// compares the callable with the pack entry's (a difference is a
// *VerifyError, counted as cache.EventVerifyMismatch). A pack entry that
// cannot be read or stored only costs a pack.
func (d *Driver) packed(ctx context.Context, req *api.Request, res *compileResult) ([]cache.Output, [][]byte, *packEntry, error) {
	enc, err := inventory.Encode(packRecord(req, res))
	if err != nil || d.opt.Store == nil {
		outs, data, err := pack(req, res)
		return outs, data, nil, err
	}
	k := cache.Key(sha256.Sum256(enc))
	stored := d.storedPack(ctx, k)
	if stored != nil && !d.opt.Verify {
		outs, data := packOutputs(req, res, stored)
		return outs, data, nil, nil
	}
	outs, data, err := pack(req, res)
	if err != nil {
		return nil, nil, nil, err
	}
	blob := data[len(data)-1]
	if stored != nil {
		if bytes.Equal(stored, blob) {
			return outs, data, nil, nil
		}
		_ = cache.Count(ctx, d.opt.Store, cache.EventVerifyMismatch, "")
		return nil, nil, nil, &VerifyError{Key: k.String(), Tier: TierLocal + " pack", Diffs: []OutputDiff{{
			Name:   CallableName,
			Stored: "sha256:" + hex.EncodeToString(sha256Of(stored)),
			Fresh:  "sha256:" + hex.EncodeToString(sha256Of(blob)),
		}}}
	}
	return outs, data, &packEntry{key: k, record: enc, blob: blob}, nil
}

// packEntry is a pack entry to store: its key, its encoded record and the
// callable.
type packEntry struct {
	key    cache.Key
	record []byte
	blob   []byte
}

// putPack stores pe (if any) with the hashid of its callable on id's
// platform and runtime, in the local store only (a pack is cheaper made
// again than fetched). A pack entry the store refuses only costs a pack.
func (d *Driver) putPack(ctx context.Context, id *identity, pe *packEntry) {
	if pe == nil {
		return
	}
	hashid, _ := registry.ChipHashid(id.platform, id.runtime, pe.blob)
	_ = d.localStore().Put(ctx, &cache.Entry{
		Key:     pe.key,
		Record:  pe.record,
		Outputs: []cache.Output{{Name: CallableName, Mode: 0o644}},
		Meta:    map[string]string{"kind": PackKind, "hashid": hashid.String(), "platform": id.platform, "runtime": id.runtime},
	}, cache.Readers(pe.blob))
}

// storedPack returns the callable of pack entry k, or nil when the store
// has none or cannot read it. The entry is looked up first: a Get that
// misses counts a request miss.
func (d *Driver) storedPack(ctx context.Context, k cache.Key) []byte {
	if _, err := cache.Lookup(ctx, d.opt.Store, k); err != nil {
		return nil
	}
	hit, err := d.opt.Store.Get(ctx, k)
	if err != nil || len(hit.Entry.Outputs) != 1 || hit.Entry.Outputs[0].Name != CallableName {
		return nil
	}
	b, err := hit.Read(0)
	if err != nil {
		return nil
	}
	return b
}

// packOutputs returns the outputs of req whose units compiled to res and
// whose callable is blob, as pack returns them.
func packOutputs(req *api.Request, res *compileResult, blob []byte) ([]cache.Output, [][]byte) {
	outs := []cache.Output{{Name: OrchestrationName, Mode: 0o755}}
	data := [][]byte{res.binaries["orchestration"]}
	for _, k := range req.Kernels {
		outs = append(outs, cache.Output{Name: KernelName(k.FuncID), Mode: 0o755})
		data = append(data, res.binaries[kernelRole(k.FuncID)])
	}
	outs = append(outs, cache.Output{Name: CallableName, Mode: 0o644})
	data = append(data, blob)
	for i := range outs {
		outs[i].Size = int64(len(data[i]))
		outs[i].Digest = sha256.Sum256(data[i])
	}
	return outs, data
}
