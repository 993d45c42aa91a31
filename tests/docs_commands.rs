//! The commands the README and `docs/` show still parse: every `farm-apiserver …` (or
//! `cargo run -- …`) in a code block, and in the Makefile's recipes, is parsed by the server's
//! own command line, so a renamed or removed flag fails here, and every `make TARGET` names a
//! target of the Makefile.

use clap::Parser;
use farm_apiserver::config::Cli;
use std::path::{Path, PathBuf};

/// The Markdown files whose code blocks are checked: the README and every page under `docs/`.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut folders = vec![root.join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages
}

/// The shell command lines of `markdown`'s fenced code blocks, with the line they start on:
/// continuation lines joined; in a `console` block only the lines after a `$ ` prompt.
fn command_lines(markdown: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut block: Option<String> = None;
    let mut pending: Option<(usize, String)> = None;
    for (number, line) in markdown.lines().enumerate().map(|(i, l)| (i + 1, l)) {
        let trimmed = line.trim_start();
        if let Some(fence) = trimmed.strip_prefix("```") {
            lines.extend(pending.take());
            block = match block {
                Some(_) => None,
                None => Some(fence.trim().to_string()),
            };
            continue;
        }
        let Some(language) = &block else { continue };
        let command = match (&mut pending, language.as_str()) {
            (Some((_, joined)), _) => {
                joined.push(' ');
                joined.push_str(trimmed);
                None
            }
            (None, "console") => trimmed.strip_prefix("$ ").map(|c| (number, c.to_string())),
            (None, "sh" | "bash" | "shell" | "") => Some((number, trimmed.to_string())),
            (None, _) => None,
        };
        if let Some(command) = command {
            pending = Some(command);
        }
        if let Some((start, joined)) = pending.take() {
            match joined.strip_suffix('\\') {
                Some(open) => pending = Some((start, open.to_string())),
                // A quote still open goes on to the next line, as in a shell.
                None if shlex::split(&joined).is_none() => pending = Some((start, joined)),
                None => lines.push((start, joined)),
            }
        }
    }
    lines
}

/// Where a shell word ends a simple command.
fn ends_command(word: &str) -> bool {
    matches!(word, "&" | "&&" | "||" | "|" | ";") || word.starts_with('>') || word.starts_with("2>")
}

/// The arguments of each farm-apiserver invocation in `words`: after a word naming the binary
/// (`farm-apiserver`, `./target/release/farm-apiserver`) in a command's first position (after
/// variable assignments, or after `exec --` as mirrord writes it), or after `cargo run … --`
/// (unless `-p` names another package of the workspace).
fn invocations(words: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut first = true;
    let mut cargo_run = false;
    let mut i = 0;
    while i < words.len() {
        let word = words[i].as_str();
        let names_binary = ["farm-apiserver", "target/debug/farm-apiserver", "target/release/farm-apiserver"]
            .iter()
            .any(|b| word == *b || word.ends_with(&format!("/{b}")));
        let binary = first && names_binary || cargo_run && word == "--";
        if binary {
            let args: Vec<String> = words[i + 1..].iter().take_while(|w| !ends_command(w)).cloned().collect();
            i += args.len();
            found.push(args);
            cargo_run = false;
        } else if ends_command(word) {
            first = true;
            cargo_run = false;
        } else if word == "--" {
            // `mirrord exec … -- COMMAND`, `env … -- COMMAND`.
            first = true;
        } else if word == "cargo" && words.get(i + 1).is_some_and(|w| w == "run") {
            cargo_run = true;
            first = false;
        } else if cargo_run && matches!(word, "-p" | "--package") {
            // `cargo run -p ops-apiserver -- …` runs another package of the workspace.
            cargo_run = words.get(i + 1).is_some_and(|p| p == "farm-apiserver");
        } else if !(first && word.contains('=') && !word.starts_with('-')) {
            first = false;
        }
        i += 1;
    }
    found
}

/// The targets `makefile` defines.
fn make_targets(makefile: &str) -> Vec<String> {
    makefile
        .lines()
        .filter(|l| !l.starts_with('\t') && !l.starts_with('#'))
        .filter_map(|l| l.split_once(':').map(|(targets, _)| targets))
        .flat_map(|targets| targets.split_whitespace().map(str::to_string))
        .collect()
}

/// The recipe lines of `makefile` (`make run` is the README's first command), its variables
/// (`NAME ?= value`) replaced by their defaults.
fn recipe_lines(makefile: &str) -> Vec<(usize, String)> {
    let defaults: Vec<(String, &str)> = makefile
        .lines()
        .filter_map(|l| l.split_once("?="))
        .map(|(name, value)| (format!("$({})", name.trim()), value.trim()))
        .collect();
    let recipes = makefile.lines().enumerate().filter_map(|(i, l)| Some((i + 1, l.strip_prefix('\t')?)));
    recipes
        .map(|(number, line)| {
            (number, defaults.iter().fold(line.to_string(), |line, (name, value)| line.replace(name, value)))
        })
        .collect()
}

#[test]
fn every_farm_apiserver_command_and_make_target_in_the_docs_exists() {
    let makefile = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Makefile")).unwrap();
    let targets = make_targets(&makefile);
    let (mut parsed, mut made, mut failures) = (0, 0, Vec::new());
    let mut sources: Vec<(PathBuf, Vec<(usize, String)>)> = pages()
        .into_iter()
        .map(|page| (page.clone(), command_lines(&std::fs::read_to_string(&page).unwrap())))
        .collect();
    sources.push((PathBuf::from("Makefile"), recipe_lines(&makefile)));
    for (page, commands) in sources {
        for (line, command) in commands {
            let at = format!("{}:{line}: {command}", page.display());
            let Some(words) = shlex::split(&command) else {
                failures.push(format!("{at}\n  not a shell command line"));
                continue;
            };
            for args in invocations(&words) {
                parsed += 1;
                let argv = std::iter::once("farm-apiserver".to_string()).chain(args);
                if let Err(e) = Cli::try_parse_from(argv) {
                    failures.push(format!("{at}\n  {}", e.to_string().lines().next().unwrap_or_default()));
                }
            }
            if let Some(target) = words.first().filter(|w| *w == "make").and(words.get(1)) {
                made += 1;
                if !target.contains('=') && !targets.contains(target) {
                    failures.push(format!("{at}\n  the Makefile has no target {target}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "commands in the docs that no longer parse:\n{}", failures.join("\n"));
    // The checks must have something to check: the README and the Makefile show more than these.
    assert!(parsed >= 5 && made >= 3, "found only {parsed} farm-apiserver commands and {made} make commands");
}

#[test]
fn command_lines_are_found_joined_and_split_into_invocations() {
    let markdown = "text farm-apiserver --nope\n```sh\nFOO=1 ./target/release/farm-apiserver serve \\\n  --standalone &\nmake run # = cargo run -- serve\n```\n```console\n$ cargo run --release -- certs --out x | tee y\nfarm-apiserver output line\n$ mirrord exec -t deploy/farm-apiserver -- farm-apiserver serve\n```\n";
    let lines = command_lines(markdown);
    let commands: Vec<&str> = lines.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(
        commands,
        [
            "FOO=1 ./target/release/farm-apiserver serve  --standalone &",
            "make run # = cargo run -- serve",
            "cargo run --release -- certs --out x | tee y",
            "mirrord exec -t deploy/farm-apiserver -- farm-apiserver serve",
        ]
    );
    assert_eq!(lines[0].0, 3);
    let found: Vec<Vec<Vec<String>>> =
        commands.iter().map(|c| invocations(&shlex::split(c).unwrap_or_default())).collect();
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(found[0], [words(&["serve", "--standalone"])]);
    assert_eq!(found[2], [words(&["certs", "--out", "x"])]);
    assert_eq!(found[3], [words(&["serve"])]);
    // Another package's binary is not the farm's; `-p farm-apiserver` is.
    let other = words(&["cargo", "run", "-p", "ops-apiserver", "--", "--standalone"]);
    assert!(invocations(&other).is_empty());
    let farm = words(&["cargo", "run", "--package", "farm-apiserver", "--", "serve"]);
    assert_eq!(invocations(&farm), [words(&["serve"])]);
    // A word that names the binary elsewhere than a command's first position is not one.
    assert!(invocations(&words(&["kubectl", "get", "farm-apiserver"])).is_empty());
}
