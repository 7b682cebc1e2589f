//! reconcile-host: parse the command line and hand over to `render`, `conformance`, the controller
//! (`run`) or the platform (`serve`).

use clap::Parser;
use reconcile_host::cli::{Cli, Command};
use reconcile_host::{conformance, controller, platform, render, telemetry};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Render(args) => {
            telemetry::init_logging(cli.log_format, "warn");
            render::render(&args, &mut std::io::stdout().lock())
        }
        Command::Conformance(args) => {
            telemetry::init_logging(cli.log_format, "warn");
            conformance::conformance(&args, &mut std::io::stdout().lock())
        }
        Command::Run(args) => {
            telemetry::init_logging(cli.log_format, "info,kube=warn");
            controller::run(*args)
        }
        Command::Serve(args) => {
            telemetry::init_logging(cli.log_format, "info,kube=warn");
            platform::serve(*args)
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
