package metrics

import "runtime/debug"

// module is drover's module path: in an application's binary drover is a
// dependency, in its own commands the main module.
const module = "github.com/drover-project/drover"

// BuildInfo is drover's version and VCS revision as the binary's build
// information records them: the module version ("(devel)" when built from
// a work tree) and, when drover is the main module, the commit.
func BuildInfo() (version, revision string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown", ""
	}
	return buildInfo(bi)
}

func buildInfo(bi *debug.BuildInfo) (version, revision string) {
	version = "unknown"
	if bi.Main.Path == module {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	} else {
		for _, d := range bi.Deps {
			if d.Path == module {
				version = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					version = d.Replace.Version
				}
			}
		}
	}
	if version == "" {
		version = "(devel)"
	}
	return version, revision
}
