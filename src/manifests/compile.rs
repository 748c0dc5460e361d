//! The compiled fallback: what kopgen cannot derive statically (a function it cannot fold, a
//! hand-written `JsonSchema`, another kube version) it derives the way kube-rs users do by
//! hand, with a small crdgen program that depends on the user's crate and prints `crd()`.
//!
//! The program lives in the crate's target directory (`target/kopgen/crdgen-<hash>/`, one per
//! crate), is its own workspace, starts from the crate's `Cargo.lock` (so it builds against the
//! versions the operator runs with), and is built with cargo into that same target directory,
//! so only the user's crate and the small program compile after the first time.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use super::{
    derive::KindOutput,
    error::{CompileError, ManifestError, SourceError},
    index::Index,
    kinds::Kind,
    options::Options,
    render::{HEADER, Rendered},
};

/// The user's crate, as the crdgen program depends on it.
#[derive(Debug, Clone)]
pub struct Crate {
    pub manifest: PathBuf,
    /// Its package name, which the program depends on.
    pub package: String,
    /// Its library's root directory (`src/`), which module paths are relative to.
    pub src: PathBuf,
    /// Features the program enables on it, beside its default ones.
    pub features: Vec<String>,
    /// The Kubernetes version the program selects for k8s-openapi (`1.33`), where the crate
    /// leaves it to its binary (see [`super::crate_k8s_version::K8sVersion`]): built alone,
    /// k8s-openapi would refuse to build without one.
    pub k8s_openapi_version: Option<String>,
}

impl Crate {
    /// The crate of `manifest`, with `features` on and the Kubernetes version `k8s` (as
    /// [`super::crate_k8s_version::k8s_version`] reads it); it must have a library target.
    pub fn open(
        manifest: &Path,
        features: &[String],
        k8s: Option<&super::crate_k8s_version::K8sVersion>,
    ) -> Result<Self, CompileError> {
        let text =
            crate::regular_file::read_to_string(manifest).map_err(|e| CompileError::Manifest {
                manifest: manifest.to_path_buf(),
                message: e.to_string(),
            })?;
        let toml: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| CompileError::Manifest {
                    manifest: manifest.to_path_buf(),
                    message: e.message().to_owned(),
                })?;
        let dir = manifest.parent().unwrap_or(Path::new("."));
        let lib = toml
            .get("lib")
            .and_then(|l| l.get("path"))
            .and_then(toml::Value::as_str)
            .map_or_else(|| dir.join("src/lib.rs"), |p| dir.join(p));
        if !lib.is_file() {
            return Err(CompileError::BinaryOnly(manifest.to_path_buf()));
        }
        let package = toml
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Ok(Self {
            manifest: manifest.to_path_buf(),
            package,
            src: lib.parent().unwrap_or(dir).to_path_buf(),
            features: features.to_vec(),
            k8s_openapi_version: k8s
                .filter(|version| !version.enabled_by_the_crate)
                .map(|version| version.number()),
        })
    }

    fn dir(&self) -> &Path {
        self.manifest.parent().unwrap_or(Path::new("."))
    }

    /// Where cargo builds: `CARGO_TARGET_DIR`, else the crate's (or its workspace's) `target/`.
    fn target_dir(&self) -> PathBuf {
        target_dir_for(std::env::var_os("CARGO_TARGET_DIR"), self.dir())
    }
}

/// The target directory for a crate in `dir`, given `CARGO_TARGET_DIR`. An empty value is
/// unset (as cargo reads it): taken at its word it would put the program in the working
/// directory.
fn target_dir_for(env: Option<std::ffi::OsString>, dir: &Path) -> PathBuf {
    if let Some(env) = env.filter(|d| !d.is_empty()) {
        return PathBuf::from(env);
    }
    let workspace = dir
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .unwrap_or(dir);
    workspace.join("target")
}

/// One kind to print: the Rust paths of its versions' generated types (`user::api::v1::Blog`),
/// and its storage version where there are several (they are merged with `merge_crds`).
#[derive(Debug, Clone)]
pub struct Request {
    pub types: Vec<String>,
    pub storage: String,
}

/// The CRDs of `kinds[i]` for each `i` of `wanted`, derived by compiling `krate`: each the
/// program's YAML, linted and located as a static one is, or the message its `crd()` panicked
/// with, at the kind's declaration.
pub fn derive_kinds(
    index: &Index,
    kinds: &[Kind],
    wanted: &[usize],
    krate: &Crate,
    options: &Options,
) -> Result<Vec<KindOutput>, ManifestError> {
    let requests = wanted
        .iter()
        .map(|&i| request(index, &kinds[i], krate))
        .collect::<Result<Vec<_>, _>>()?;
    let printed = crds(krate, &requests)?;
    Ok(wanted
        .iter()
        .zip(printed)
        .map(|(&i, yaml)| {
            let kind = &kinds[i];
            match yaml {
                Ok(yaml) => finish(index, kind, &yaml, options),
                Err(panic) => Err(vec![
                    SourceError::at(&kind.versions[0].file, kind.versions[0].span, format!(
                        "kube-derive's crd() panics for {}: {panic}",
                        kind.kind
                    ))
                    .help("kopgen compiled the crate and ran crd(); fix the type it names (kube-core cannot make a structural schema of it)"),
                ]),
            }
        })
        .collect())
}

/// What the crdgen program prints for `kind`: its versions' generated types, as paths from the
/// crate root, and the storage version they are merged under.
fn request(index: &Index, kind: &Kind, krate: &Crate) -> Result<Request, ManifestError> {
    let mut types = Vec::with_capacity(kind.versions.len());
    for cr in &kind.versions {
        let item = &index.items[cr.item];
        let file_module = &index.file_modules[item.file];
        let inline = item.module.strip_prefix(file_module.as_str()).unwrap_or("");
        let (Ok(src), Ok(file)) = (
            std::fs::canonicalize(&krate.src),
            std::fs::canonicalize(&cr.file),
        ) else {
            return Err(CompileError::OutsideCrate {
                file: cr.file.clone(),
            }
            .into());
        };
        if !file.starts_with(&src) {
            return Err(CompileError::OutsideCrate {
                file: cr.file.clone(),
            }
            .into());
        }
        // A type an attribute macro generates is named where the macro puts it.
        if let Some(generated) = &cr.generated {
            let path = generated.strip_prefix("crate").unwrap_or(generated);
            types.push(format!("{USER_CRATE}{path}"));
            continue;
        }
        let module = super::discover::module_of(USER_CRATE, &src, &file);
        let root = cr
            .attrs
            .root
            .clone()
            .unwrap_or_else(|| cr.kind().to_owned());
        // The program is another crate: it names the type where the crate exports it.
        let exported = index.public_path(&item.module, &root).and_then(|path| {
            path.strip_prefix("crate")
                .map(|p| format!("{USER_CRATE}{p}"))
        });
        types.push(exported.unwrap_or_else(|| format!("{module}{inline}::{root}")));
    }
    let storage = kind.storage.clone().unwrap_or_else(|| {
        kind.versions
            .iter()
            .find(|cr| cr.attrs.storage.unwrap_or(true))
            .map(|cr| cr.version().to_owned())
            .unwrap_or_default()
    });
    Ok(Request { types, storage })
}

/// A compiled kind's CRD as kopgen writes it: the program's YAML, linted, and with
/// `--max-desc-len` applied.
fn finish(index: &Index, kind: &Kind, yaml: &str, options: &Options) -> KindOutput {
    let at = || SourceError::at(&kind.versions[0].file, kind.versions[0].span, "");
    let mut crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        serde_json::from_str(yaml).map_err(|e| vec![at().reworded(format!("the compiled crd() is not a CRD: {e}"))])?;
    super::render::apply_settings(&mut crd, options).map_err(|e| vec![at().reworded(e)])?;
    // Written by kopgen's writer, as the static path writes it (the program's JSON is only how
    // the CRD travels here).
    let yaml = crate::yaml::to_string(&crd).map_err(|e| vec![at().reworded(e.to_string())])?;
    let contents = format!("{HEADER}{yaml}");
    let rendered = Rendered {
        contents,
        crd_name: crd.metadata.name.clone().unwrap_or_default(),
        json_bytes: super::render::json_bytes(&crd),
        findings: super::render::findings(&crd, options),
    };
    Ok(super::derive::located(index, kind, rendered))
}

/// The name the crdgen program gives the user's crate.
pub const USER_CRATE: &str = "user_crate";

/// Builds and runs the crdgen program for `requests`: per request, its CRD as JSON on one
/// line, or the message `crd()` panicked with.
pub fn crds(
    krate: &Crate,
    requests: &[Request],
) -> Result<Vec<Result<String, String>>, CompileError> {
    let target = krate.target_dir();
    // One program per crate: crates that share a target directory (`CARGO_TARGET_DIR`) must
    // not build or run each other's.
    let name = format!("kopgen-crdgen-{:016x}", {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        krate.manifest.hash(&mut hasher);
        hasher.finish()
    });
    let harness = target.join("kopgen").join(&name);
    write_if_changed(&harness.join("Cargo.toml"), &manifest(krate, &name))?;
    write_if_changed(&harness.join("src/main.rs"), &main_rs(requests))?;
    // The crate's lock, so the program builds against the versions the operator uses.
    if let Some(lock) = krate
        .dir()
        .ancestors()
        .map(|d| d.join("Cargo.lock"))
        .find(|l| l.is_file())
        && !harness.join("Cargo.lock").is_file()
    {
        std::fs::copy(&lock, harness.join("Cargo.lock"))
            .map_err(|e| CompileError::Cargo(format!("{}: {e}", lock.display())))?;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // cargo's progress goes on to the user as it comes (a first build of an operator takes
    // minutes), and is kept for the error if the build fails.
    let mut command = Command::new(&cargo);
    // k8s-openapi's own way to name a version for a library built alone; the user's own setting
    // stands.
    let named = (krate.k8s_openapi_version.as_ref())
        .filter(|_| std::env::var_os("K8S_OPENAPI_ENABLED_VERSION").is_none());
    if let Some(version) = named {
        command.env("K8S_OPENAPI_ENABLED_VERSION", version);
    }
    let mut child = command
        .args(["build", "--manifest-path"])
        .arg(harness.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| CompileError::Cargo(e.to_string()))?;
    let mut said = String::new();
    if let Some(stderr) = child.stderr.take() {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            eprintln!("    {line}");
            if said.len() < 1 << 20 {
                said.push_str(&line);
                said.push('\n');
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| CompileError::Cargo(e.to_string()))?;
    if !status.success() {
        return Err(build_failed(named.map(String::as_str), &said, harness));
    }
    let binary = target
        .join("debug")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let run = Command::new(&binary)
        .output()
        .map_err(|e| CompileError::Cargo(format!("{}: {e}", binary.display())))?;
    if !run.status.success() {
        return Err(CompileError::Run {
            status: run.status.to_string(),
            stderr: String::from_utf8_lossy(&run.stderr).trim_end().to_owned(),
        });
    }
    Ok(parse_output(
        &String::from_utf8_lossy(&run.stdout),
        requests.len(),
    ))
}

/// Why the crdgen's build failed (`said`, cargo's output), when kopgen named the Kubernetes
/// version `named` for a crate that names none.
fn build_failed(named: Option<&str>, said: &str, harness: PathBuf) -> CompileError {
    // The errors, without the progress lines before them.
    let errors: Vec<&str> = said
        .lines()
        .skip_while(|line| !line.starts_with("error") && !line.starts_with("warning"))
        .collect();
    let stderr = errors.join("\n");
    // A library the crate depends on enables a version kopgen did not see (a registry
    // crate's), and k8s-openapi refuses the one kopgen named beside it.
    if let Some(named) = named
        && let Some(library) = other_version(&stderr, named)
    {
        let version = named.to_owned();
        return CompileError::TwoKubernetesVersions {
            version,
            library,
            stderr,
        };
    }
    CompileError::Build { harness, stderr }
}

/// The version other than `named` (`1.37`) in k8s-openapi's refusal of two ("Both v1_33 and
/// v1_37 features are enabled on the k8s-openapi crate"), as `1.33`.
fn other_version(stderr: &str, named: &str) -> Option<String> {
    let (_, rest) = stderr.split_once("Both v1_")?;
    let (first, rest) = rest.split_once(" and v1_")?;
    let (second, _) = rest.split_once(" features are enabled on the k8s-openapi crate")?;
    let named = named.strip_prefix("1.")?;
    [first, second]
        .into_iter()
        .find(|minor| *minor != named && minor.bytes().all(|b| b.is_ascii_digit()))
        .map(|minor| format!("1.{minor}"))
}

/// The program's manifest: its own workspace (it sits inside the user's), depending on the
/// user's crate under a fixed name, on kube-core for `CustomResourceExt` and `merge_crds`, and
/// on serde_json, which every kube crate already builds, to send the CRDs back.
fn manifest(krate: &Crate, name: &str) -> String {
    let path = krate.dir().display().to_string();
    format!(
        "# Written by `kopgen manifests` to compile the kinds it cannot derive statically.\n\
         [package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [workspace]\n\n\
         [dependencies]\n\
         {USER_CRATE} = {{ package = {}, path = {}, features = {} }}\n\
         kube-core = \"*\"\n\
         serde_json = \"1\"\n",
        toml::Value::String(krate.package.clone()),
        toml::Value::String(path),
        toml::Value::Array(
            krate
                .features
                .iter()
                .map(|f| toml::Value::String(f.clone()))
                .collect()
        ),
    )
}

/// The program: for each request a marker line, then the CRD as JSON on one line, or `PANIC`
/// and the message on one line.
fn main_rs(requests: &[Request]) -> String {
    let mut main = String::from(
        "// Written by `kopgen manifests` to compile the kinds it cannot derive statically.\n\
         use kube_core::CustomResourceExt as _;\n\n\
         fn print(json: impl FnOnce() -> Result<String, serde_json::Error> + std::panic::UnwindSafe) {\n\
         \x20   println!(\"=== kopgen-crd\");\n\
         \x20   match std::panic::catch_unwind(json) {\n\
         \x20       Ok(Ok(json)) => println!(\"{json}\"),\n\
         \x20       Ok(Err(e)) => println!(\"PANIC {}\", e.to_string().replace('\\n', \" \")),\n\
         \x20       Err(panic) => {\n\
         \x20           let message = panic\n\
         \x20               .downcast_ref::<String>()\n\
         \x20               .cloned()\n\
         \x20               .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))\n\
         \x20               .unwrap_or_default();\n\
         \x20           println!(\"PANIC {}\", message.replace('\\n', \" \"));\n\
         \x20       }\n\
         \x20   }\n\
         }\n\n\
         fn main() {\n\
         \x20   std::panic::set_hook(Box::new(|_| {}));\n",
    );
    for request in requests {
        let crd = match request.types.as_slice() {
            [one] => format!("{one}::crd()"),
            many => format!(
                "kube_core::crd::merge_crds(vec![{}], {:?}).unwrap()",
                many.iter()
                    .map(|t| format!("{t}::crd()"))
                    .collect::<Vec<_>>()
                    .join(", "),
                request.storage
            ),
        };
        main.push_str(&format!("    print(|| serde_json::to_string(&{crd}));\n"));
    }
    main.push_str("}\n");
    main
}

/// The program's output, one result per request.
fn parse_output(stdout: &str, requests: usize) -> Vec<Result<String, String>> {
    let mut results: Vec<Result<String, String>> = stdout
        .split("=== kopgen-crd\n")
        .skip(1)
        .map(|section| match section.strip_prefix("PANIC ") {
            Some(message) => Err(message.trim_end().to_owned()),
            None => Ok(section.to_owned()),
        })
        .collect();
    results.resize(
        requests,
        Err("the crdgen program printed nothing for this kind".into()),
    );
    results
}

fn write_if_changed(path: &Path, contents: &str) -> Result<(), CompileError> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(contents) {
        return Ok(());
    }
    let io = |e: std::io::Error| CompileError::Cargo(format!("{}: {e}", path.display()));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(path, contents).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_sections_become_results_in_order() {
        let out = "=== kopgen-crd\napiVersion: v1\n=== kopgen-crd\nPANIC boom\n";
        let results = parse_output(out, 3);
        assert_eq!(results[0].as_deref(), Ok("apiVersion: v1\n"));
        assert_eq!(results[1], Err("boom".to_owned()));
        assert!(results[2].is_err());
    }

    /// k8s-openapi's build script refuses two versions; kopgen named one, so the other is the
    /// library's, and the error names it. Its refusal of none is another error.
    #[test]
    fn a_second_kubernetes_version_is_named_as_the_librarys() {
        let said = "   Compiling k8s-openapi v0.29.0\n\
            error: failed to run custom build command for `k8s-openapi v0.29.0`\n\n\
            Caused by:\n  process didn't exit successfully: `build-script-build` (exit status: 101)\n  \
            --- stderr\n\n  thread 'main' panicked at build.rs:45:13:\n\n  \
            Both v1_33 and v1_37 features are enabled on the k8s-openapi crate. These feature \
            indicates which version of Kubernetes the k8s-openapi crate should support.\n";
        let harness = PathBuf::from("target/kopgen/crdgen");
        let error = build_failed(Some("1.37"), said, harness.clone());
        let message = error.to_string();
        assert!(
            matches!(&error, CompileError::TwoKubernetesVersions { library, .. } if library == "1.33"),
            "{message}"
        );
        assert!(
            message.contains("a library it depends on enables 1.33")
                && message.contains("K8S_OPENAPI_ENABLED_VERSION=1.33")
                && message.contains("features = [\"v1_33\"]")
                && !message.contains("Compiling"),
            "{message}"
        );
        // The user named the version (kopgen did not): the build's own error.
        let error = build_failed(None, said, harness.clone());
        assert!(matches!(error, CompileError::Build { .. }), "{error}");
        let none = "error: failed to run custom build command for `k8s-openapi v0.29.0`\n  \
            None of the v1_* features are enabled on the k8s-openapi crate.\n";
        let error = build_failed(Some("1.37"), none, harness);
        assert!(matches!(error, CompileError::Build { .. }), "{error}");
    }

    #[test]
    fn several_versions_are_merged_with_their_storage_version() {
        let main = main_rs(&[Request {
            types: vec!["user_crate::v1::Foo".into(), "user_crate::v2::Foo".into()],
            storage: "v1".into(),
        }]);
        assert!(main.contains(
            "merge_crds(vec![user_crate::v1::Foo::crd(), user_crate::v2::Foo::crd()], \"v1\")"
        ));
    }
}

#[cfg(test)]
mod target_dir_tests {
    use super::*;

    #[test]
    fn an_empty_cargo_target_dir_is_unset() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("Cargo.lock"), "").expect("lock");
        let krate = dir.path().join("member");
        std::fs::create_dir(&krate).expect("mkdir");
        assert_eq!(
            target_dir_for(Some("".into()), &krate),
            dir.path().join("target")
        );
        assert_eq!(target_dir_for(None, &krate), dir.path().join("target"));
        assert_eq!(
            target_dir_for(Some("/t".into()), &krate),
            PathBuf::from("/t")
        );
    }
}
