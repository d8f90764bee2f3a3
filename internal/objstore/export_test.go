package objstore

// SetCopyLimits lowers the size past which Copy copies in parts, so a test
// can reach that path with small objects; the returned func restores them.
func SetCopyLimits(maxSize, partSize int64) (restore func()) {
	oldMax, oldPart := maxCopySize, copyPartSize
	maxCopySize, copyPartSize = maxSize, partSize
	return func() { maxCopySize, copyPartSize = oldMax, oldPart }
}
