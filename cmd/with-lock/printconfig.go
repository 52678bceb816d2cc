package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/with-lock/with-lock/internal/config"
)

// printConfigJSON is --print-config --json's output, one object.
type printConfigJSON struct {
	ConfigFile       string             `json:"config_file"`
	ConfigFileSource string             `json:"config_file_source"`
	ConfigFileRead   bool               `json:"config_file_read"`
	RedisIsDefault   bool               `json:"redis_is_default"`
	Settings         []config.Effective `json:"settings"`
	Secrets          map[string]string  `json:"secrets"` // where each password without a setting comes from
}

// printConfig prints the effective settings and where each came from, as
// a config file (key = value) whose comments name the sources, or as JSON.
// Passwords never appear: a URL's shows as ***.
func printConfig(w io.Writer, cfg *config.Config, log *logger) int {
	secrets := cfg.SecretSources(os.Getenv)
	if cfg.JSON {
		b, err := json.Marshal(printConfigJSON{
			ConfigFile: cfg.File, ConfigFileSource: cfg.FileSource(), ConfigFileRead: cfg.FileRead(),
			RedisIsDefault: cfg.RedisIsDefault(), Settings: cfg.Effective(), Secrets: secrets,
		})
		if err != nil {
			return log.failed(exitInternal, "encode settings: %v", err)
		}
		fmt.Fprintln(w, string(b))
		return 0
	}
	read := "read"
	if !cfg.FileRead() {
		read = "not found, none read"
	}
	fmt.Fprintf(w, "# with-lock's effective settings, each with where it came from: flag > env > file > default.\n")
	fmt.Fprintf(w, "# config file: %s (%s; %s)\n", cfg.File, cfg.FileSource(), read)
	if cfg.RedisIsDefault() {
		fmt.Fprintf(w, "# WARNING: %s\n", config.LocalOnlyWarning)
	}
	for _, e := range cfg.Effective() {
		line := e.Name + " = " + config.FormatValue(e.Value)
		fmt.Fprintf(w, "%-44s # %s\n", line, e.Source)
	}
	for _, name := range []string{"password", "sentinel-password"} {
		if src, ok := secrets[name]; ok {
			fmt.Fprintf(w, "# %s: set by %s (not shown)\n", name, src)
		}
	}
	return 0
}
