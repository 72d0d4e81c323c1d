package mailbox

// Tensors made from the arena's buffers, and the check that a tensor
// still lies in a live allocation.

// Tensor returns a reference to the buffer as a tensor of dtype and shape
// (packed). The tensor remembers the buffer, so that CheckLive can tell
// that it was freed.
func (b Buffer) Tensor(dtype DType, shape ...uint64) Tensor {
	return Tensor{Offset: b.Off, Nbytes: b.Len, DType: dtype, Shape: shape, from: b}
}

// CheckTensor reports whether t lies within one live allocation of a: for
// a tensor made by Buffer.Tensor, that its buffer is live (CheckLive) and t
// within it; for another, that its range is inside one allocation live
// now. The error is a *LifetimeError.
func (a *Arena) CheckTensor(t Tensor) error {
	bad := func(r string) error { return &LifetimeError{Offset: t.Offset, Nbytes: t.Nbytes, Reason: r} }
	if t.from.arena != nil {
		if err := a.CheckLive(t.from); err != nil {
			return bad(err.(*LifetimeError).Reason)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for off, al := range a.live {
		if t.Offset >= off && t.Offset-off <= al.len && t.Nbytes <= al.len-(t.Offset-off) {
			return nil
		}
	}
	if t.from.arena != nil {
		return bad("lies outside its buffer")
	}
	return bad("is within no live allocation of the arena (freed?)")
}
