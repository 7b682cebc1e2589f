//! reconcile-host: parse the command line and hand over to `render`, `conformance`, `plan`,
//! `migrate-storage`, `push`, the controller (`run`), the platform (`serve`) or, in the child process
//! where those compile modules, `compile-module`.

use std::process::ExitCode;

use clap::Parser;
use reconcile_host::cli::{Cli, Command};
use reconcile_host::{
    conformance, guest, memory, migrate, plan, platform, reconciler, render, source, telemetry,
};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let done = |()| ExitCode::SUCCESS;
    let result = match cli.command {
        Command::Render(args) => {
            telemetry::init_logging(cli.log_format, "warn");
            render::render(&args.options(), &mut std::io::stdout().lock()).map(done)
        }
        Command::Conformance(args) => {
            telemetry::init_logging(cli.log_format, "warn");
            let out = &mut std::io::stdout().lock();
            let (module, fixtures) = (&args.module, &args.fixtures);
            let runtime = args.runtime.config();
            conformance::conformance(module, fixtures, &args.children, runtime, out).map(done)
        }
        Command::Plan(args) => {
            telemetry::init_logging(cli.log_format, "warn");
            plan::plan(args.options(), &mut std::io::stdout().lock())
        }
        Command::MigrateStorage(args) => {
            telemetry::init_logging(cli.log_format, "warn");
            migrate::migrate_storage(&args.crd, &mut std::io::stdout().lock()).map(done)
        }
        Command::Push(args) => {
            telemetry::init_logging(cli.log_format, "warn");
            source::oci::push(&args.options(), &mut std::io::stdout().lock()).map(done)
        }
        Command::CompileModule(args) => {
            guest::compile_stdin_to_stdout(args.memory_mib, args.cpu_seconds).map(done)
        }
        Command::Run(args) => {
            memory::limit_arenas();
            telemetry::init_logging(cli.log_format, "info,kube=warn");
            reconciler::run(args.options()).map(done)
        }
        Command::Serve(args) => {
            memory::limit_arenas();
            telemetry::init_logging(cli.log_format, "info,kube=warn");
            platform::serve(args.options()).map(done)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
