//! No import cycle between the files of `host/src`: the layers `lib.rs` states hold only while no file
//! uses an item of a file that (through others) uses one of its own.
//!
//! The graph: a node per `.rs` file under `src/` (the binary's `main.rs` aside: nothing imports it),
//! an edge A -> B when A uses an item defined in B, by a private `use` or by a path in its code
//! (`crate::`, `super::`, `self::` and names in scope all resolved, also inside attributes and macro
//! arguments, such as a clap `value_parser = crate::...`). A `pub use` is a name, not a use: it leads
//! whoever uses the name to the file that defines the item, so a `mod.rs` that only declares and
//! re-exports its children is no node of any edge, and one that defines items is a node like any
//! file. Test modules count like the rest (`#[cfg(test)] mod tests` and `*_tests.rs` files): tests
//! are compiled code with the same imports. The check finds the strongly connected components
//! (Tarjan) and names, for each, its files and the lines that make its edges.
//!
//! The same graph checks the top layer: `cli` turns flags into the plain values the other modules
//! take, so no other file uses it, and none but it (and `main`) mentions clap.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{Item, UseTree, Visibility};

#[test]
fn no_file_of_the_host_is_in_an_import_cycle() {
    let cycles = Graph::of(&host_files()).cycles();
    let report: Vec<String> = cycles.iter().map(Cycle::to_string).collect();
    println!("{} import cycle(s):\n{}", cycles.len(), report.join("\n"));
    assert!(
        cycles.is_empty(),
        "import cycles between files of host/src (cut one edge of each: move the shared item to \
         the lower file, or to a small file below both):\n{}",
        report.join("\n")
    );
}

#[test]
fn only_the_cli_knows_flags() {
    let files = host_files();
    let in_cli = |file: &str| file.starts_with("cli/");
    let mut found: Vec<String> = (Graph::of(&files).edges.into_iter())
        .filter(|edge| in_cli(&edge.to) && !in_cli(&edge.from))
        .map(|edge| format!("  {} -> {}: {}", edge.from, edge.to, edge.evidence))
        .collect();
    for (file, text) in &files {
        if !in_cli(file) && file != "main.rs" && text.contains("clap") {
            found.push(format!("  {file} mentions clap"));
        }
    }
    assert!(
        found.is_empty(),
        "flags outside the cli (give the module a plain settings value, made in cli/):\n{}",
        found.join("\n")
    );
}

/// The files of `host/src`, by path relative to it.
fn host_files() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    read_tree(&src, &src, &mut files);
    files
}

fn read_tree(root: &Path, dir: &Path, files: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_tree(root, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            files.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// One module: the file it is written in and the names it declares.
#[derive(Default)]
struct Module {
    file: String,
    /// Items defined here (structs, functions, ...): a use of one is an edge to `file`.
    items: BTreeSet<String>,
    /// Child modules, by name.
    children: BTreeSet<String>,
    /// Names brought in by `use` (public or not), and the path each stands for.
    imports: BTreeMap<String, Vec<String>>,
    /// The modules of `use path::*`.
    globs: Vec<Vec<String>>,
}

/// What a path names.
#[derive(Clone, Debug, PartialEq)]
enum Target {
    Module(Vec<String>),
    /// An item defined in this file.
    Item(String),
}

/// Why one file depends on another: the first line found that makes the edge.
#[derive(Clone, Debug)]
struct Edge {
    from: String,
    to: String,
    evidence: String,
}

struct Graph {
    edges: Vec<Edge>,
}

/// One strongly connected component of more than one file.
struct Cycle {
    files: Vec<String>,
    edges: Vec<Edge>,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "cycle of {} files: {}",
            self.files.len(),
            self.files.join(", ")
        )?;
        for edge in &self.edges {
            writeln!(f, "  {} -> {}: {}", edge.from, edge.to, edge.evidence)?;
        }
        Ok(())
    }
}

impl Graph {
    /// The graph of the crate whose root is `lib.rs` in `files` (path relative to `src/` -> text).
    fn of(files: &BTreeMap<String, String>) -> Graph {
        let mut modules = BTreeMap::new();
        let mut parsed = BTreeMap::new();
        let root = syn::parse_file(&files["lib.rs"]).expect("lib.rs parses");
        declare(
            files,
            &mut modules,
            &mut parsed,
            vec![],
            "lib.rs",
            &root.items,
        );
        parsed.insert("lib.rs".to_string(), root);
        let mut collector = Collector {
            modules: &modules,
            edges: BTreeMap::new(),
        };
        for (module, items) in module_items(&modules, &parsed) {
            collector.items(&module, items);
        }
        Graph {
            edges: collector.edges.into_values().collect(),
        }
    }

    /// Every component of more than one file, with the edges inside it.
    fn cycles(&self) -> Vec<Cycle> {
        let mut nodes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for edge in &self.edges {
            nodes.entry(&edge.from).or_default().push(&edge.to);
            nodes.entry(&edge.to).or_default();
        }
        let components = tarjan(&nodes);
        (components.into_iter())
            .filter(|c| c.len() > 1)
            .map(|files| {
                let inside: BTreeSet<&str> = files.iter().map(String::as_str).collect();
                let edges = (self.edges.iter())
                    .filter(|e| inside.contains(e.from.as_str()) && inside.contains(e.to.as_str()))
                    .cloned()
                    .collect();
                Cycle { files, edges }
            })
            .collect()
    }
}

/// Records the modules declared by `items` (module `path`, written in `file`), then their children's.
fn declare(
    files: &BTreeMap<String, String>,
    modules: &mut BTreeMap<Vec<String>, Module>,
    parsed: &mut BTreeMap<String, syn::File>,
    path: Vec<String>,
    file: &str,
    items: &[Item],
) {
    let mut module = Module {
        file: file.to_string(),
        ..Module::default()
    };
    for item in items {
        match item {
            Item::Use(u) => flatten(&u.tree, &mut vec![], &mut module.imports, &mut module.globs),
            Item::Mod(m) => {
                let name = m.ident.to_string();
                module.children.insert(name.clone());
                let child_path = [path.clone(), vec![name.clone()]].concat();
                match &m.content {
                    Some((_, inner)) => declare(files, modules, parsed, child_path, file, inner),
                    None => {
                        let child_file = child_file(file, &name, &m.attrs, files);
                        let text = &files[&child_file];
                        let ast = syn::parse_file(text).expect("a module parses");
                        declare(files, modules, parsed, child_path, &child_file, &ast.items);
                        parsed.insert(child_file, ast);
                    }
                }
            }
            other => module.items.extend(item_name(other)),
        }
    }
    modules.insert(path, module);
}

/// The file of `mod name;` declared in `file`: `#[path]`, else `name.rs` or `name/mod.rs` beside it
/// (in a folder named after `file` unless `file` is `lib.rs` or a `mod.rs`).
fn child_file(
    file: &str,
    name: &str,
    attrs: &[syn::Attribute],
    files: &BTreeMap<String, String>,
) -> String {
    let file = Path::new(file);
    let dir = file.parent().unwrap_or(Path::new(""));
    let explicit = attrs.iter().find(|a| a.path().is_ident("path"));
    if let Some(syn::Meta::NameValue(nv)) = explicit.map(|a| &a.meta)
        && let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = &nv.value
    {
        return join(dir.join(s.value()));
    }
    let stem = file.file_stem().unwrap().to_string_lossy();
    let dir: PathBuf = match stem.as_ref() {
        "lib" | "mod" | "main" => dir.to_path_buf(),
        _ => dir.join(stem.as_ref()),
    };
    let flat = join(dir.join(format!("{name}.rs")));
    if files.contains_key(&flat) {
        flat
    } else {
        join(dir.join(name).join("mod.rs"))
    }
}

fn join(path: PathBuf) -> String {
    path.to_string_lossy().replace('\\', "/")
}

fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// The names a `use` tree brings in, each with its full path, and its globs.
fn flatten(
    tree: &UseTree,
    prefix: &mut Vec<String>,
    names: &mut BTreeMap<String, Vec<String>>,
    globs: &mut Vec<Vec<String>>,
) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, names, globs);
            prefix.pop();
        }
        UseTree::Name(n) if n.ident == "self" => {
            names.insert(prefix.last().unwrap().clone(), prefix.clone());
        }
        UseTree::Name(n) => {
            let full = [prefix.clone(), vec![n.ident.to_string()]].concat();
            names.insert(n.ident.to_string(), full);
        }
        UseTree::Rename(r) => {
            let mut full = prefix.clone();
            if r.ident != "self" {
                full.push(r.ident.to_string());
            }
            if r.rename != "_" {
                names.insert(r.rename.to_string(), full);
            }
        }
        UseTree::Glob(_) => globs.push(prefix.clone()),
        UseTree::Group(g) => {
            for tree in &g.items {
                flatten(tree, prefix, names, globs);
            }
        }
    }
}

/// Each module with the items written in it (inline modules apart from their file's).
fn module_items<'a>(
    modules: &BTreeMap<Vec<String>, Module>,
    parsed: &'a BTreeMap<String, syn::File>,
) -> Vec<(Vec<String>, &'a [Item])> {
    fn walk<'a>(path: Vec<String>, items: &'a [Item], out: &mut Vec<(Vec<String>, &'a [Item])>) {
        for item in items {
            if let Item::Mod(m) = item
                && let Some((_, inner)) = &m.content
            {
                walk(
                    [path.clone(), vec![m.ident.to_string()]].concat(),
                    inner,
                    out,
                );
            }
        }
        out.push((path, items));
    }
    let mut out = vec![];
    for (path, module) in modules {
        // A file's own module: the one whose parent is written in another file (or the root).
        let parent_file = (!path.is_empty())
            .then(|| &modules[&path[..path.len() - 1]].file)
            .filter(|f| **f == module.file);
        if parent_file.is_none() {
            walk(path.clone(), &parsed[&module.file].items, &mut out);
        }
    }
    out
}

struct Collector<'m> {
    modules: &'m BTreeMap<Vec<String>, Module>,
    /// By (from, to): the first evidence found.
    edges: BTreeMap<(String, String), Edge>,
}

impl Collector<'_> {
    fn items(&mut self, module: &[String], items: &[Item]) {
        for item in items {
            match item {
                // Inline modules are walked on their own (`module_items`).
                Item::Mod(_) => {}
                Item::Use(u) if !matches!(u.vis, Visibility::Inherited) => {}
                Item::Use(u) => self.use_tree(module, &u.tree),
                other => {
                    let mut visitor = PathVisitor {
                        module,
                        collector: self,
                    };
                    visitor.visit_item(other);
                }
            }
        }
    }

    fn use_tree(&mut self, module: &[String], tree: &UseTree) {
        let (mut names, mut globs) = (BTreeMap::new(), vec![]);
        flatten(tree, &mut vec![], &mut names, &mut globs);
        for path in names.values().chain(&globs) {
            self.path(module, path, &format!("use {}", path.join("::")));
        }
    }

    /// Adds the edge a path makes, if it names an item of another file.
    fn path(&mut self, module: &[String], path: &[String], evidence: &str) {
        let Some(Target::Item(to)) = resolve(self.modules, module, path, 0) else {
            return;
        };
        let from = &self.modules[module].file;
        if *from != to {
            let key = (from.clone(), to.clone());
            self.edges.entry(key).or_insert_with(|| Edge {
                from: from.clone(),
                to,
                evidence: evidence.to_string(),
            });
        }
    }
}

/// What `path`, written in `module`, names; `None` outside the crate or unknown (a local, a generic).
fn resolve(
    modules: &BTreeMap<Vec<String>, Module>,
    module: &[String],
    path: &[String],
    depth: usize,
) -> Option<Target> {
    if depth > 32 || path.is_empty() {
        return None;
    }
    let mut current: Vec<String> = module.to_vec();
    let mut rest = path;
    match path[0].as_str() {
        "crate" => {
            current.clear();
            rest = &path[1..];
        }
        "self" => rest = &path[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                current.pop()?;
                rest = &rest[1..];
            }
        }
        _ => {}
    }
    let mut target = Target::Module(current);
    for (i, segment) in rest.iter().enumerate() {
        let Target::Module(at) = &target else {
            break; // an associated item or variant of the item found
        };
        // The first segment of a relative path is a name in scope; an unknown one is outside.
        target = lookup(modules, at, segment, depth)?;
        let _ = i;
    }
    Some(target)
}

fn lookup(
    modules: &BTreeMap<Vec<String>, Module>,
    module: &[String],
    name: &str,
    depth: usize,
) -> Option<Target> {
    let m = modules.get(module)?;
    if m.children.contains(name) {
        return Some(Target::Module(
            [module.to_vec(), vec![name.to_string()]].concat(),
        ));
    }
    if m.items.contains(name) {
        return Some(Target::Item(m.file.clone()));
    }
    if let Some(path) = m.imports.get(name) {
        return resolve(modules, module, path, depth + 1);
    }
    m.globs.iter().find_map(|glob| {
        let Some(Target::Module(at)) = resolve(modules, module, glob, depth + 1) else {
            return None;
        };
        (at != module)
            .then(|| lookup(modules, &at, name, depth + 1))
            .flatten()
    })
}

struct PathVisitor<'c, 'm> {
    module: &'c [String],
    collector: &'c mut Collector<'m>,
}

impl<'ast> Visit<'ast> for PathVisitor<'_, '_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let evidence = format!("path {}", segments.join("::"));
            self.collector.path(self.module, &segments, &evidence);
        }
        visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.collector.use_tree(self.module, &item.tree);
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if let syn::Meta::List(list) = &attr.meta {
            self.tokens(list.tokens.clone());
        }
        if let syn::Meta::NameValue(nv) = &attr.meta {
            self.visit_expr(&nv.value);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }
}

impl PathVisitor<'_, '_> {
    /// The `crate::`/`super::`/`self::` paths in tokens syn leaves unparsed (attribute and macro
    /// arguments).
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if ["crate", "super", "self"].contains(&&*id.to_string()) => {
                    let mut segments = vec![id.to_string()];
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(next)) =
                        (trees.get(i + 1), trees.get(i + 2), trees.get(i + 3))
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                        && let TokenTree::Ident(next) = next
                    {
                        segments.push(next.to_string());
                        i += 3;
                    }
                    if segments.len() > 1 {
                        let evidence =
                            format!("path {} (in a macro or attribute)", segments.join("::"));
                        self.collector.path(self.module, &segments, &evidence);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

/// Tarjan's strongly connected components.
fn tarjan(nodes: &BTreeMap<&str, Vec<&str>>) -> Vec<Vec<String>> {
    struct State<'a> {
        nodes: &'a BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<String>>,
    }
    fn connect<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in &s.nodes[v] {
            if !s.index.contains_key(w) {
                connect(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = vec![];
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.components.push(component);
        }
    }
    let mut state = State {
        nodes,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on_stack: BTreeSet::new(),
        components: vec![],
    };
    for &v in nodes.keys() {
        if !state.index.contains_key(v) {
            connect(&mut state, v);
        }
    }
    state.components.sort();
    state.components
}

/// The checker on small trees, so that it can fail.
mod checker {
    use super::*;

    fn cycles(files: &[(&str, &str)]) -> Vec<Vec<String>> {
        let files = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        Graph::of(&files)
            .cycles()
            .into_iter()
            .map(|c| c.files)
            .collect()
    }

    #[test]
    fn a_cycle_through_use_lines_is_found_with_its_lines() {
        let files = [
            ("lib.rs", "pub mod a; pub mod b; pub mod c;"),
            ("a.rs", "use crate::b::B; pub struct A;"),
            ("b.rs", "use crate::c::C; pub struct B;"),
            ("c.rs", "use crate::a::A; pub struct C;"),
        ];
        assert_eq!(cycles(&files), vec![vec!["a.rs", "b.rs", "c.rs"]]);
        let files = files.map(|(p, t)| (p.to_string(), t.to_string())).into();
        let text = Graph::of(&files).cycles()[0].to_string();
        assert!(text.contains("c.rs -> a.rs: use crate::a::A"), "{text}");
    }

    #[test]
    fn a_mod_rs_that_only_reexports_is_not_a_node() {
        let files = [
            ("lib.rs", "pub mod m; pub mod user;"),
            (
                "m/mod.rs",
                "mod low; mod high; pub use low::Low; pub use high::High;",
            ),
            ("m/low.rs", "pub struct Low;"),
            ("m/high.rs", "use super::Low; pub struct High(Low);"),
            ("user.rs", "use crate::m::High;"),
        ];
        assert!(cycles(&files).is_empty());
        // Defining an item the children use makes it a node: then its own uses count.
        let files = [
            ("lib.rs", "pub mod m;"),
            (
                "m/mod.rs",
                "mod child; pub use child::Child; pub struct Top; fn f() -> Child { todo!() }",
            ),
            ("m/child.rs", "use super::Top; pub struct Child(Top);"),
        ];
        assert_eq!(cycles(&files), vec![vec!["m/child.rs", "m/mod.rs"]]);
    }

    #[test]
    fn super_self_inline_paths_and_attributes_are_resolved() {
        let files = [
            ("lib.rs", "pub mod x; pub mod y;"),
            ("x/mod.rs", "mod a; mod b; pub use a::parse;"),
            (
                "x/a.rs",
                "pub fn parse() {} pub struct A; fn f() -> super::b::B { todo!() }",
            ),
            (
                "x/b.rs",
                "pub struct B; fn g() { self::h(); crate::x::a::A; } fn h() {}",
            ),
            (
                "y.rs",
                "#[arg(value_parser = crate::x::parse)] pub struct Y;",
            ),
        ];
        assert_eq!(cycles(&files), vec![vec!["x/a.rs", "x/b.rs"]]);
        // An attribute's path is an edge too.
        let files = [
            ("lib.rs", "pub mod x; pub mod y;"),
            ("x.rs", "use crate::y::Y; pub fn parse() {}"),
            (
                "y.rs",
                "#[arg(value_parser = crate::x::parse)] pub struct Y;",
            ),
        ];
        assert_eq!(cycles(&files), vec![vec!["x.rs", "y.rs"]]);
    }

    #[test]
    fn test_modules_count_and_path_attributes_are_followed() {
        // A test module in its own file is a leaf: nothing uses its items.
        let files = [
            ("lib.rs", "pub mod a; pub mod b;"),
            (
                "a.rs",
                "pub struct A; #[cfg(test)] #[path = \"a_tests.rs\"] mod tests;",
            ),
            ("a_tests.rs", "use super::*; use crate::b::B;"),
            ("b.rs", "use crate::a::A; pub struct B;"),
        ];
        assert!(cycles(&files).is_empty());
        // An inline one is its file's code.
        let files = [
            ("lib.rs", "pub mod a; pub mod b;"),
            (
                "a.rs",
                "pub struct A; #[cfg(test)] mod tests { use crate::b::B; }",
            ),
            ("b.rs", "use crate::a::A; pub struct B;"),
        ];
        assert_eq!(cycles(&files), vec![vec!["a.rs", "b.rs"]]);
    }
}
