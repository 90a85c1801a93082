package dockerdef

import (
	"fmt"
	"regexp"
	"strings"
)

// imageRef is the grammar of a registry image reference as Docker
// documents it: [HOST[:PORT]/]PATH[:TAG][@DIGEST], the path's components
// lowercase letters and digits joined by '.', '_', '__' or dashes.
var imageRef = regexp.MustCompile(`^` +
	`(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*` +
	`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?` +
	`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)

// transports are the names apptainer reads as a source other than a
// registry when a reference starts with NAME: (oci-archive:/path,
// docker-daemon:image…): host files, the docker daemon's socket.
var transports = []string{"docker", "docker-archive", "docker-daemon", "oci", "oci-archive", "oras", "library", "shub", "http", "https", "localimage", "instance"}

// CheckImageRef refuses what is not a registry image reference, the only
// kind Docker's FROM takes: a scheme (oci-archive:///x.tar,
// docker-daemon://img) would have the build's host read its own files or
// daemon into the image a session sees. The pull adds docker:// itself.
func CheckImageRef(ref string) error {
	if strings.Contains(ref, "://") {
		return fmt.Errorf("%q names a transport (%s://): FROM takes a registry image, which nel pulls as docker://", ref, ref[:strings.Index(ref, "://")])
	}
	if name, _, ok := strings.Cut(ref, ":"); ok && !strings.Contains(name, "/") {
		for _, t := range transports {
			if strings.EqualFold(name, t) {
				return fmt.Errorf("%q names a transport (%s:): FROM takes a registry image, which nel pulls as docker://", ref, name)
			}
		}
	}
	if !imageRef.MatchString(ref) {
		return fmt.Errorf("%q is not an image reference ([HOST[:PORT]/]NAME[:TAG][@DIGEST])", ref)
	}
	return nil
}
