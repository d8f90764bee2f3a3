package appimage_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/drover-project/drover/internal/appimage"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Line int
	Cmd  string // upper case: FROM, RUN, ...
	Args string
}

func (in instruction) String() string { return fmt.Sprintf("line %d: %s %s", in.Line, in.Cmd, in.Args) }

// parseDockerfile splits a Dockerfile into instructions. A parser directive
// (# syntax=, # escape=) would change what the rest means: refused.
func parseDockerfile(text string) ([]instruction, error) {
	var out []instruction
	var cur *instruction
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			if len(out) == 0 && cur == nil && regexp.MustCompile(`^#\s*\w+\s*=`).MatchString(line) {
				return nil, fmt.Errorf("line %d: parser directive %q: this test knows no directive", n, line)
			}
			continue
		}
		if line == "" {
			continue
		}
		more := strings.HasSuffix(line, `\`)
		line = strings.TrimSuffix(line, `\`)
		if cur == nil {
			cmd, args, _ := strings.Cut(line, " ")
			cur = &instruction{Line: n, Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)}
		} else {
			cur.Args += " " + line
		}
		if !more {
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: the file ends inside an instruction continued with \\", cur.Line)
	}
	return out, nil
}

// expand is s with $NAME and ${NAME} replaced from vars, as Docker does in
// FROM, WORKDIR, COPY, USER and ENV.
func expand(s string, vars map[string]string) string {
	return os.Expand(s, func(k string) string { return vars[k] })
}

// dockerBuild runs a Dockerfile's stages on this machine as `docker build`
// with buildArgs would: the build stage's RUN commands on the
// host, with its absolute paths mapped to host directories, and the final
// stage's instructions applied to a modelled file system and image
// configuration.
type dockerBuild struct {
	context   string            // the build context: the repository
	mapped    map[string]string // absolute paths of the build stage -> host directories
	buildArgs map[string]string // docker build --build-arg
	args      map[string]string // global ARGs (before the first FROM)

	stage    string            // the build stage's name (FROM ... AS name)
	stageEnv map[string]string // its ARGs
	workdir  string

	final  tree
	config v1.Config
}

// goEnv is added to the environment of the go commands the test runs: no
// network, and no VCS stamp, which an engineer's commit between the two
// builds would change.
var goEnv = []string{"GOPROXY=off", "GOFLAGS=-mod=readonly -buildvcs=false"}

var absPath = regexp.MustCompile(`(^|[\s"'=])(/[^\s"'$;&|()]*)`)

// host is the host path of p, an absolute path of the build stage.
func (b *dockerBuild) host(p string) (string, error) {
	for from, to := range b.mapped {
		if p == from || strings.HasPrefix(p, from+"/") {
			h := filepath.Join(to, strings.TrimPrefix(p, from))
			if strings.HasSuffix(p, "/") {
				h += "/" // go build -o DIR/ writes into DIR
			}
			return h, nil
		}
	}
	return "", fmt.Errorf("%s is not under a path this test maps to the host (%v)", p, slices.Sorted(maps.Keys(b.mapped)))
}

func (b *dockerBuild) run(ctx context.Context, ins []instruction) error {
	for _, in := range ins {
		if err := b.step(ctx, in); err != nil {
			return fmt.Errorf("Dockerfile %s: %w", in, err)
		}
	}
	if b.final == nil {
		return fmt.Errorf("Dockerfile has no final stage FROM scratch")
	}
	return nil
}

func (b *dockerBuild) step(ctx context.Context, in instruction) error {
	inBuild := b.stage != "" && b.final == nil
	switch {
	case in.Cmd == "ARG" && b.stage == "":
		return b.arg(in.Args, b.args)
	case in.Cmd == "FROM" && b.stage == "":
		f := strings.Fields(expand(in.Args, b.args))
		if len(f) != 3 || !strings.EqualFold(f[1], "AS") {
			return fmt.Errorf("expected FROM image AS name for the build stage")
		}
		// The host's go builds in place of the image's: the same minor version.
		goMinor := strings.Join(strings.SplitN(strings.TrimPrefix(runtime.Version(), "go"), ".", 3)[:2], ".")
		if f[0] != "golang:"+goMinor {
			return fmt.Errorf("the build stage is %s, but this test builds with %s: expected golang:%s", f[0], runtime.Version(), goMinor)
		}
		b.stage = f[2]
	case in.Cmd == "ARG" && inBuild:
		return b.arg(in.Args, b.stageEnv)
	case in.Cmd == "WORKDIR" && inBuild:
		b.workdir = path.Join(b.workdir, expand(in.Args, b.stageEnv))
	case in.Cmd == "COPY" && inBuild:
		// The context is the repository, and the test runs where it is: a
		// copy of the context to the same place under a mapped path is done.
		f := strings.Fields(in.Args)
		if len(f) < 2 || strings.HasPrefix(f[0], "--") {
			return fmt.Errorf("expected COPY src... dest without flags")
		}
		srcs, dest := f[:len(f)-1], path.Join(b.workdir, f[len(f)-1])
		for _, src := range srcs {
			target := dest
			if src != "." && (len(srcs) > 1 || strings.HasSuffix(f[len(f)-1], "/")) {
				target = path.Join(dest, path.Base(src))
			}
			h, err := b.host(target)
			if err != nil {
				return err
			}
			if h != filepath.Join(b.context, src) {
				return fmt.Errorf("copies %s to %s, which the test maps to %s, not to the context's %s", src, target, h, src)
			}
		}
	case in.Cmd == "RUN" && inBuild:
		return b.runCommand(ctx, in.Args)
	case in.Cmd == "FROM" && inBuild:
		if in.Args != "scratch" {
			return fmt.Errorf("the final stage must be FROM scratch, so that its file system is only what it copies")
		}
		b.final = tree{}
	case in.Cmd == "COPY" && b.final != nil:
		return b.copyFromStage(in.Args)
	case in.Cmd == "USER" && b.final != nil:
		b.config.User = in.Args
	case in.Cmd == "WORKDIR" && b.final != nil:
		dir := path.Join("/", b.config.WorkingDir, in.Args)
		if e, ok := b.final[strings.TrimPrefix(dir, "/")]; !ok || !strings.HasPrefix(e.Mode, "d") {
			return fmt.Errorf("WORKDIR %s is no directory of the copied file system; the test does not model Docker creating it", dir)
		}
		b.config.WorkingDir = dir
	case in.Cmd == "ENV" && b.final != nil:
		for _, kv := range strings.Fields(in.Args) {
			if !strings.Contains(kv, "=") || strings.ContainsAny(kv, `"'$\`) {
				return fmt.Errorf("expected ENV KEY=VALUE ... without quotes or variables")
			}
			b.config.Env = append(b.config.Env, kv)
		}
	default:
		return fmt.Errorf("this test does not know %s here: teach it what the instruction does to the image", in.Cmd)
	}
	return nil
}

// arg declares ARG NAME[=default] in vars, a --build-arg overriding it.
func (b *dockerBuild) arg(decl string, vars map[string]string) error {
	k, v, ok := strings.Cut(decl, "=")
	if given, set := b.buildArgs[k]; set {
		v, ok = given, true
	}
	if !ok || strings.ContainsAny(k, " \t") {
		return fmt.Errorf("expected ARG NAME=default (one, with a default) or a --build-arg for it")
	}
	vars[k] = v
	return nil
}

// readmeBuildArgs are the --build-arg values of the README's docker build
// command: the Dockerfile is tested as the README tells users to run it.
func readmeBuildArgs(repo string) (map[string]string, error) {
	text, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(string(text)) {
		cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "docker build ")
		if !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, "&&")
		args := map[string]string{}
		f := strings.Fields(cmd)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "--build-arg" {
				k, v, _ := strings.Cut(f[i+1], "=")
				args[k] = v
			}
		}
		return args, nil
	}
	return nil, fmt.Errorf("README.md has no line starting with docker build: expected the command users run the Dockerfile with")
}

// runCommand runs a build-stage RUN on the host, in the mapped WORKDIR with
// the stage's ARGs in the environment. `go mod download` only fills the
// module cache, which this machine's go fills as it builds: skipped.
func (b *dockerBuild) runCommand(ctx context.Context, cmdline string) error {
	if strings.HasPrefix(cmdline, "[") {
		return fmt.Errorf("the exec form of RUN: expected the shell form")
	}
	if cmdline == "go mod download" {
		return nil
	}
	var err error
	mapped := absPath.ReplaceAllStringFunc(cmdline, func(m string) string {
		loc := absPath.FindStringSubmatchIndex(m)
		h, herr := b.host(m[loc[4]:loc[5]])
		if herr != nil && err == nil {
			err = herr
		}
		return m[:loc[4]] + h
	})
	if err != nil {
		return err
	}
	dir, err := b.host(b.workdir)
	if err != nil {
		return fmt.Errorf("WORKDIR: %w", err)
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", mapped)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), goEnv...)
	for k, v := range b.stageEnv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", mapped, err, out)
	}
	return nil
}

// copyFromStage applies COPY --from=<build stage> src dest to the final
// file system: a directory's contents, or a file, with their modes and
// owners (COPY --from keeps them, unlike a copy from the context).
func (b *dockerBuild) copyFromStage(args string) error {
	f := strings.Fields(args)
	if len(f) != 3 || f[0] != "--from="+b.stage {
		return fmt.Errorf("expected COPY --from=%s src dest, one source and no other flag", b.stage)
	}
	src, err := b.host(f[1])
	if err != nil {
		return err
	}
	dest := strings.TrimPrefix(path.Clean(f[2]), "/")
	if e, ok := b.final[dest]; dest != "" && (!ok || !strings.HasPrefix(e.Mode, "d")) {
		return fmt.Errorf("the destination %s is no directory yet: the test does not model Docker creating it", f[2])
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("expected a directory to copy, %s is not", f[1])
	}
	return readDir(src, dest, b.final)
}

// TestDockerfileMatchesBuilder builds the repository's Dockerfile as the
// README tells users to (its docker build command's --build-arg), without
// Docker: its build
// stage's steps run here, the final stage is applied to a model of the
// image. Its file system and configuration must be the image `make image`
// writes (hack/image --app) of the same package: paths, types, modes,
// owners and contents, the binary included, so both build it the same way.
func TestDockerfileMatchesBuilder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the Dockerfile's build stage gives /home/nonroot to 65532 as root, as docker build runs it")
	}
	ctx := t.Context()
	repo, err := appimage.ModuleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(repo, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ins, err := parseDockerfile(string(text))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	buildArgs, err := readmeBuildArgs(repo)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	b := &dockerBuild{
		buildArgs: buildArgs,
		context:   repo,
		mapped:    map[string]string{"/src": repo, "/out": out},
		args:      map[string]string{},
		stageEnv:  map[string]string{},
		workdir:   "/",
	}
	if err := b.run(ctx, ins); err != nil {
		t.Fatal(err)
	}

	// What make image runs, into a file of its own.
	img := filepath.Join(t.TempDir(), "image.tar")
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/image", "--app", b.stageEnv["APP"], "-o", img)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), goEnv...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, msg)
	}
	image, err := tarball.ImageFromPath(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b.config, cf.Config); diff != "" {
		t.Errorf("image configuration (-Dockerfile +make image):\n%s", diff)
	}
	if diff := cmp.Diff(b.final, imageTree(t, image)); diff != "" {
		t.Errorf("file system (-Dockerfile +make image):\n%s", diff)
	}
	if _, ok := b.final["app/"+path.Base(b.stageEnv["APP"])]; !ok {
		t.Errorf("the Dockerfile's image has no /app/%s", path.Base(b.stageEnv["APP"]))
	}
}
