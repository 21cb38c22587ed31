package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// An output is a file or directory a command will write when its work is
// done. Every command checks its outputs before the work starts, so a path
// it cannot write is one line and exit 2 (bad input), not a finished run
// whose result is lost.
type output struct {
	flag, path string
	dir        bool // a directory (created if missing), not a file
}

// checkOutputs checks each output that is set ("" is not; "-" is stdout).
// A file is opened for writing (created and removed again when it did not
// exist; an existing one is left as it is until the command writes it); a
// directory is created if missing and must take a new file.
func checkOutputs(outs ...output) error {
	for _, o := range outs {
		if o.path == "" || o.path == "-" {
			continue
		}
		var err error
		if o.dir {
			err = checkDir(o.path)
		} else {
			err = checkFile(o.path)
		}
		if err != nil {
			return fmt.Errorf("-%s %s: cannot write there: %v", o.flag, o.path, reason(err))
		}
	}
	return nil
}

func checkFile(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return errors.New("is a directory")
	}
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	if errors.Is(statErr, fs.ErrNotExist) {
		return os.Remove(path)
	}
	return nil
}

func checkDir(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(path, ".relaysim-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// reason is an error without the path a *fs.PathError repeats.
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
