// Command image builds drover's application image without Docker
// (internal/appimage): the application binary, built as the Dockerfile
// builds it or given, on the project's small non-root base.
//
//	go run ./hack/image --app ./examples/wordcount --tag drover.invalid/wordcount:dev -o bin/wordcount-image.tar
//	go run ./hack/image --binary bin/wordcount -o bin/wordcount-image.tar
//	go run ./hack/image --binary /out/bin/wordcount --rootfs /out/rootfs   # the Dockerfile's build stage
//
// -o writes a docker-archive tarball for `ctr -n k8s.io images import` (or
// `docker load`); pods then use imagePullPolicy Never or IfNotPresent.
// --rootfs writes the image's file system as a directory. Invalid flags exit
// with 2, other failures with 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"syscall"

	"github.com/drover-project/drover/internal/appimage"
)

// usageError is bad input: exit 2.
type usageError struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "hack/image:", err)
	if errors.As(err, new(usageError)) {
		os.Exit(2)
	}
	os.Exit(1)
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("image", flag.ContinueOnError)
	app := fl.String("app", "", "Go main package to build (CGO_ENABLED=0 go build -trimpath -ldflags='-s -w'), e.g. ./examples/wordcount")
	binary := fl.String("binary", "", "an application binary already built, instead of --app")
	name := fl.String("name", "", "the binary's name in the image, /app/<name> (default: the last element of --app or --binary)")
	tag := fl.String("tag", "", "the image's tag in the tarball (default drover.invalid/<name>:dev, which nothing pulls)")
	out := fl.String("o", "", "write the image as a docker-archive tarball to this file")
	rootfs := fl.String("rootfs", "", "write the image's file system into this new or empty directory (needs root)")
	caCerts := fl.String("ca-certs", appimage.DefaultCACerts, "PEM bundle of certificate authorities for the image (Debian's ca-certificates)")
	fl.SetOutput(io.Discard)
	if err := fl.Parse(args); err != nil {
		return usageError{fmt.Errorf("%w; flags: --app PKG | --binary FILE, [--name NAME] [--tag TAG] -o FILE | --rootfs DIR", err)}
	}
	switch {
	case fl.NArg() > 0:
		return usageError{fmt.Errorf("unexpected argument %q; expected only flags", fl.Arg(0))}
	case (*app == "") == (*binary == ""):
		return usageError{errors.New("give exactly one of --app PKG (a Go main package to build) and --binary FILE")}
	case *out == "" && *rootfs == "":
		return usageError{errors.New("give -o FILE (an image tarball), --rootfs DIR (a file system), or both")}
	}
	if *name == "" {
		*name = path.Base(filepath.ToSlash(*app + *binary))
	}
	if err := appimage.CheckName(*name); err != nil {
		return usageError{err}
	}
	if *tag == "" {
		*tag = "drover.invalid/" + *name + ":dev"
	}
	if err := appimage.CheckTag(*tag); err != nil {
		return usageError{err}
	}
	certs, err := appimage.ReadCACerts(*caCerts)
	if err != nil {
		return usageError{err}
	}

	if *app != "" {
		dir, err := os.MkdirTemp("", "drover-image-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*binary = filepath.Join(dir, *name)
		if err := appimage.GoBuild(ctx, ".", *app, *binary); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(*binary)
	if err != nil {
		return usageError{fmt.Errorf("application binary: %w", err)}
	}
	spec, err := appimage.App(*name, data, certs)
	if err != nil {
		return usageError{err}
	}
	if *rootfs != "" {
		if err := spec.WriteRootFS(*rootfs); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: the file system of the image of %s (/app/%s)\n", *rootfs, *binary, *name)
	}
	if *out == "" {
		return nil
	}
	img, err := spec.Image()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	if err := appimage.WriteTarball(*out, img, *tag); err != nil {
		return err
	}
	// The configuration's digest is the image ID docker and crictl show;
	// ctr import writes a manifest of its own, with another digest.
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, image ID %s, %.1f MiB, binary /app/%s (local:///app/%s)\n", *out, *tag, id, float64(st.Size())/(1<<20), *name, *name)
	fmt.Fprintf(stdout, "import it into a node's containerd: ctr -n k8s.io images import %s\n", *out)
	return nil
}
