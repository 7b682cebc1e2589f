//! `reconcile-host render`: the guest and the safety rules on a parent from a file, no cluster needed
//! (or the guest's conversion of it to another version). What a reconciler author runs before shipping
//! a module.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::guest::{Module, Request, Runtime, RuntimeConfig};
use crate::kind::Gvk;
use crate::related::related_from;
use crate::text::OutputFormat;
use crate::validate::{Rules, validate};

/// What `render` works on, as a reconciler author has it: files.
#[derive(Debug)]
pub struct RenderOptions {
    /// The component (.wasm).
    pub module: PathBuf,
    /// The parent object (YAML or JSON).
    pub parent: PathBuf,
    /// The observed children (multi-document YAML).
    pub observed: Option<PathBuf>,
    /// The objects the module's `related` may select from (multi-document YAML).
    pub related: Option<PathBuf>,
    /// The child kinds allowed; empty: every kind.
    pub children: Vec<Gvk>,
    /// Call as while the parent is being deleted.
    pub finalizing: bool,
    /// Instead of reconciling, convert the parent to this apiVersion.
    pub convert_to: Option<String>,
    pub output: OutputFormat,
    pub runtime: RuntimeConfig,
}

pub fn render(args: &RenderOptions, out: &mut impl Write) -> anyhow::Result<()> {
    let parent = read_documents(&args.parent)?
        .into_iter()
        .next()
        .with_context(|| format!("{} holds no object", args.parent.display()))?;
    let observed = match &args.observed {
        Some(path) => read_documents(path)?,
        None => Vec::new(),
    };
    let namespace = parent["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let tag = format!(
        "{namespace}/{}",
        parent["metadata"]["name"].as_str().unwrap_or("?")
    );

    let runtime = Runtime::new(args.runtime.clone())?;
    let module = Module::load_file(&runtime, &args.module)?;
    if let Some(to_api_version) = &args.convert_to {
        let converted = module.convert(&parent, to_api_version)?;
        return args.output.write(&converted, out);
    }
    let available = match &args.related {
        Some(path) => read_documents(path)?,
        None => Vec::new(),
    };
    let request = Request {
        parent: parent.to_string(),
        children: observed.iter().map(Value::to_string).collect(),
        related: related_from(&module, &tag, &parent, &available)?,
        finalizing: args.finalizing,
    };
    let answer = module.call(&tag, &request)?;
    if args.children.is_empty() {
        eprintln!("note: no --child given, so child kinds are not checked against an allow-list");
    }
    let rules = Rules::new((!args.children.is_empty()).then(|| args.children.clone()));
    let children = validate(&answer, &namespace, &rules)?;

    match args.output {
        OutputFormat::Json => {
            let doc = json!({
                "children": children.iter().map(|c| &c.object).collect::<Vec<_>>(),
                "status": answer.status,
                "requeueAfterSeconds": answer.requeue_after.map(|d| d.as_secs()),
                "finalized": answer.finalized,
            });
            OutputFormat::Json.write(&doc, out)?;
        }
        OutputFormat::Yaml => {
            for child in &children {
                write!(out, "---\n{}", serde_norway::to_string(&child.object)?)?;
            }
            // The status is not a resource: print it as comments so the output stays `kubectl apply`-able.
            if let Some(status) = &answer.status {
                writeln!(out, "# status:")?;
                for line in serde_norway::to_string(status)?.lines() {
                    writeln!(out, "#   {line}")?;
                }
            }
            if let Some(after) = answer.requeue_after {
                writeln!(out, "# requeueAfterSeconds: {}", after.as_secs())?;
            }
            if answer.finalized {
                writeln!(out, "# finalized: true")?;
            }
        }
    }
    Ok(())
}

/// Every non-empty document of a YAML (or JSON) file.
pub fn read_documents(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut docs = Vec::new();
    for doc in serde_norway::Deserializer::from_str(&text) {
        let value =
            Value::deserialize(doc).with_context(|| format!("parsing {}", path.display()))?;
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}
