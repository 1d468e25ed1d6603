//! Pages rendered by a real headless browser (Debian's `chromium`, installed by `.ci/run`), for
//! the tests of `ycsb`'s self-contained HTML reports.

use std::path::Path;

/// Renders `page` in headless Chromium and returns the DOM it built.
pub fn render(page: &Path) -> String {
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|b| {
            std::process::Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("a Chromium browser (Debian package chromium; .ci/run installs it)");
    let profile = std::env::temp_dir().join(format!("ycsb-chromium-{}", std::process::id()));
    let out = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            &format!("--user-data-dir={}", profile.display()),
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let _ = std::fs::remove_dir_all(&profile);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {stderr}");
    // The page has no script; any console message from it would be an error in the page.
    assert!(
        !stderr.contains("CONSOLE") && !stderr.contains("Uncaught"),
        "console errors: {stderr}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `data-points` of the chart whose title starts with `title`.
pub fn chart_points(dom: &str, title: &str) -> Vec<u64> {
    dom.split("<svg")
        .skip(1)
        .filter(|svg| svg.contains(&format!("data-chart=\"{title}")))
        .map(|svg| {
            let at = svg.find("data-points=\"").unwrap() + 13;
            svg[at..].split('"').next().unwrap().parse().unwrap()
        })
        .collect()
}
