package ops

// SetTestHooks sets the hooks that let tests see a handle's serialization:
// wait runs when a call finds the handle held by another and is about to
// wait for it; call runs in Execute, holding the handle, just before the
// child is called. Nil clears a hook.
func SetTestHooks(wait, call func(*Handle)) {
	set := func(p interface{ Store(*func(*Handle)) }, f func(*Handle)) {
		if f == nil {
			p.Store(nil)
			return
		}
		p.Store(&f)
	}
	set(&testHookWait, wait)
	set(&testHookCall, call)
}
