//! Which objects of a kind are `Ready` at their generation, followed with `kubectl get --watch`
//! as their changes arrive: listing 10,000 objects at every poll takes the API server and
//! kubectl a good part of the two cores the operator under test (or measured) runs on. Shared
//! by the tests and the operators bench (`#[path]`), beside the control plane they include.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader},
    process::{Child, Stdio},
    sync::{Arc, Mutex, PoisonError},
    thread,
};

use super::control_plane::ControlPlane;

/// The readiness of each object of `resource` in `namespace`, as the watch last told it.
pub struct ReadyWatch {
    resource: String,
    namespace: String,
    ready: Arc<Mutex<HashMap<String, bool>>>,
    kubectl: Child,
}

impl ReadyWatch {
    /// Follows `resource` in `namespace` from now: the watch's first list brings each object's
    /// state, so a watch started after a change was accepted never counts what came before it.
    pub fn start(plane: &ControlPlane, resource: &str, namespace: &str) -> Self {
        let ready = Arc::new(Mutex::new(HashMap::new()));
        let kubectl = follow(plane, resource, namespace, ready.clone());
        ReadyWatch {
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            ready,
            kubectl,
        }
    }

    /// How many are Ready at their generation; a watch that ended (the API server closes them
    /// now and then) is started again, and its first list brings every object's state.
    pub fn count(&mut self, plane: &ControlPlane) -> usize {
        if matches!(self.kubectl.try_wait(), Ok(Some(_))) {
            let ready = self.ready.clone();
            self.kubectl = follow(plane, &self.resource, &self.namespace, ready);
        }
        let ready = self.ready.lock().unwrap_or_else(PoisonError::into_inner);
        ready.values().filter(|r| **r).count()
    }
}

/// `kubectl get --watch`, one line per object (name and generation, then the Ready condition's
/// observed generation and status where it has one), read into `ready` on a thread. kubectl
/// prints each chunk of the watch's first list as one List object, and each change after it as
/// an object: the template prints a line per item of the one, and for the other.
fn follow(
    plane: &ControlPlane,
    resource: &str,
    namespace: &str,
    ready: Arc<Mutex<HashMap<String, bool>>>,
) -> Child {
    let template = concat!(
        "go-template=",
        r#"{{define "line"}}{{.metadata.name}}|{{.metadata.generation}}"#,
        r#"{{with .status}}{{range .conditions}}{{if eq .type "Ready"}}"#,
        r#"|{{.observedGeneration}}|{{.status}}{{end}}{{end}}{{end}}{{"\n"}}{{end}}"#,
        r#"{{if .items}}{{range .items}}{{template "line" .}}{{end}}"#,
        r#"{{else}}{{template "line" .}}{{end}}"#,
    );
    let mut kubectl = plane
        .kubectl()
        .args(["get", resource, "-n", namespace, "--watch", "-o", template])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get --watch");
    let stdout = kubectl.stdout.take().expect("piped");
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let fields: Vec<&str> = line.split('|').collect();
            let at_generation = match fields[..] {
                [_, generation, observed, status] => status == "True" && observed == generation,
                _ => false,
            };
            let mut ready = ready.lock().unwrap_or_else(PoisonError::into_inner);
            ready.insert(fields[0].to_owned(), at_generation);
        }
    });
    kubectl
}

impl Drop for ReadyWatch {
    fn drop(&mut self) {
        let _ = self.kubectl.kill();
        let _ = self.kubectl.wait();
    }
}
