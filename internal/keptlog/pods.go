package keptlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// podsDir indexes driver pods by name: drover logs takes ns:pod after the
// pod is gone, and only the kept logs know its application then.
const podsDir = "_pods"

func podIndexName(namespace, pod string) (string, error) {
	for _, s := range []string{namespace, pod} {
		if s == "" || strings.ContainsAny(s, `/\`) || s == "." || s == ".." {
			return "", fmt.Errorf("kept logs: %q is no namespace or pod name", s)
		}
	}
	return path.Join(podsDir, namespace, pod), nil
}

// PutPod records that the driver pod namespace/pod runs application
// appID.
func PutPod(ctx context.Context, s Sink, namespace, pod, appID string) error {
	if err := checkAppID(appID); err != nil {
		return err
	}
	name, err := podIndexName(namespace, pod)
	if err != nil {
		return err
	}
	return s.Put(ctx, name, []byte(appID))
}

// AppOfPod is the application the driver pod namespace/pod ran, as PutPod
// recorded it; an error wrapping ErrNoLog when none was.
func AppOfPod(ctx context.Context, s Sink, namespace, pod string) (string, error) {
	name, err := podIndexName(namespace, pod)
	if err != nil {
		return "", err
	}
	files, err := s.List(ctx, path.Dir(name))
	if err != nil {
		return "", fmt.Errorf("kept logs: listing %s: %w", s.Path(path.Dir(name)), err)
	}
	found := false
	for _, f := range files {
		found = found || f.Name == name
	}
	if !found {
		return "", fmt.Errorf("%w: no driver pod %s/%s in %s", ErrNoLog, namespace, pod, s.Path(""))
	}
	r, err := s.Open(ctx, name, 0)
	if err != nil {
		return "", fmt.Errorf("kept logs: reading %s: %w", s.Path(name), err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, 1024))
	if err != nil {
		return "", fmt.Errorf("kept logs: reading %s: %w", s.Path(name), err)
	}
	appID := strings.TrimSpace(string(b))
	if err := checkAppID(appID); err != nil {
		return "", errors.Join(fmt.Errorf("kept logs: %s does not name an application", s.Path(name)), err)
	}
	return appID, nil
}
