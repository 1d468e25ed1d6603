//! `pe`: HBase's PerformanceEvaluation on hbase-client. See the crate docs (`pe --help`).

use std::process::ExitCode;
use std::sync::Arc;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sink: pe::LineSink = Arc::new(|line: &str| println!("{line}"));
    match pe::execute(&args, pe::Output::new(Some(sink))).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pe: {e}");
            if matches!(e, pe::PeError::Usage(_)) {
                eprintln!("Run 'pe --help' for the options and commands.");
            }
            ExitCode::FAILURE
        }
    }
}
