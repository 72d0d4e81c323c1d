package jit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sync/atomic"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/cache"
	"github.com/ptojit/ptojit/inventory"
)

// PackKind is the kind meta of a pack entry.
const PackKind = "pack"

// packs counts the callables packed in this process.
var packs atomic.Int64

// packed returns the outputs of a request miss whose units compiled to
// res: the objects and the callable its pack entry holds, else a fresh
// pack and the pack entry to store once the request's outputs were
// published (putPack), and the release of the fresh pack's file. In
// verify mode it always packs and compares the callable with the pack
// entry's (a difference is a *VerifyError, counted as
// cache.EventVerifyMismatch). A pack entry that cannot be read or stored
// only costs a pack.
func (d *Driver) packed(ctx context.Context, req *api.Request, res *compileResult) ([]cache.Output, []*object, *packEntry, func(), error) {
	enc, err := inventory.Encode(packRecord(req, res))
	if err != nil || d.opt.Store == nil {
		outs, objs, release, err := pack(req, res, d.tempDir())
		return outs, objs, nil, release, err
	}
	k := cache.Key(sha256.Sum256(enc))
	stored := d.storedPack(ctx, k)
	if stored != nil && !d.opt.Verify {
		outs, objs := packOutputs(req, res, stored)
		return outs, objs, nil, func() {}, nil
	}
	outs, objs, release, err := pack(req, res, d.tempDir())
	if err != nil {
		return nil, nil, nil, nil, err
	}
	blob := objs[len(objs)-1]
	if stored != nil {
		if stored.digest == blob.digest {
			return outs, objs, nil, release, nil
		}
		release()
		_ = cache.Count(ctx, d.opt.Store, cache.EventVerifyMismatch, "")
		return nil, nil, nil, nil, &VerifyError{Key: k.String(), Tier: TierLocal + " pack", Diffs: []OutputDiff{{
			Name:   CallableName,
			Stored: "sha256:" + hex.EncodeToString(stored.digest[:]),
			Fresh:  "sha256:" + hex.EncodeToString(blob.digest[:]),
		}}}
	}
	return outs, objs, &packEntry{key: k, record: enc, blob: blob}, release, nil
}

// packEntry is a pack entry to store: its key, its encoded record and the
// callable.
type packEntry struct {
	key    cache.Key
	record []byte
	blob   *object
}

// putPack stores pe (if any) with the hashid of its callable on id's
// platform and runtime, in the local store only (a pack is cheaper made
// again than fetched). A pack entry the store refuses only costs a pack.
func (d *Driver) putPack(ctx context.Context, id *identity, pe *packEntry) {
	if pe == nil {
		return
	}
	hashid, err := objectHashid(id.platform, id.runtime, pe.blob)
	if err != nil {
		return
	}
	rs, closeAll, err := readers([]*object{pe.blob})
	if err != nil {
		return
	}
	defer closeAll()
	_ = d.localStore().Put(ctx, &cache.Entry{
		Key:     pe.key,
		Record:  pe.record,
		Outputs: []cache.Output{{Name: CallableName, Mode: 0o644}},
		Meta:    map[string]string{"kind": PackKind, "hashid": hashid, "platform": id.platform, "runtime": id.runtime},
	}, rs)
}

// objectHashid is chipHashid of the callable o.
func objectHashid(platform, runtime string, o *object) (string, error) {
	return chipHashid(platform, runtime, o.digest, o.size, func() io.ReadCloser {
		r, err := o.open()
		if err != nil {
			return io.NopCloser(failedRead{err})
		}
		return r
	})
}

// failedRead is a reader that fails with err.
type failedRead struct{ err error }

func (f failedRead) Read([]byte) (int, error) { return 0, f.err }

// storedPack returns the callable of pack entry k, read once through the
// store's verifying reader, or nil when the store has none or cannot read
// it. The entry is looked up first: a Get that misses counts a request
// miss.
func (d *Driver) storedPack(ctx context.Context, k cache.Key) *object {
	if _, err := cache.Lookup(ctx, d.opt.Store, k); err != nil {
		return nil
	}
	hit, err := d.opt.Store.Get(ctx, k)
	if err != nil || len(hit.Entry.Outputs) != 1 || hit.Entry.Outputs[0].Name != CallableName {
		return nil
	}
	o, err := hitObject(hit)
	if err != nil {
		return nil
	}
	return o
}

// packOutputs returns the outputs of req whose units compiled to res and
// whose callable is blob, as pack returns them.
func packOutputs(req *api.Request, res *compileResult, blob *object) ([]cache.Output, []*object) {
	outs := []cache.Output{{Name: OrchestrationName, Mode: 0o755}}
	objs := []*object{res.binaries["orchestration"]}
	for _, k := range req.Kernels {
		outs = append(outs, cache.Output{Name: KernelName(k.FuncID), Mode: 0o755})
		objs = append(objs, res.binaries[kernelRole(k.FuncID)])
	}
	outs = append(outs, cache.Output{Name: CallableName, Mode: 0o644})
	objs = append(objs, blob)
	for i := range outs {
		outs[i].Size = objs[i].size
		outs[i].Digest = objs[i].digest
	}
	return outs, objs
}
