//! CPU time of this process's threads, for the examples that measure the store.

/// CPU seconds spent so far by this process's threads whose name starts `name` (Linux).
pub fn cpu_of_threads(name: &str) -> f64 {
    let mut seconds = 0.0;
    for entry in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let dir = entry.expect("a thread").path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let Some((_, fields)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = fields.split_whitespace().collect();
        if comm.starts_with(name) && fields.len() > 12 {
            let ticks: f64 = fields[11].parse::<f64>().unwrap_or(0.0) + fields[12].parse::<f64>().unwrap_or(0.0);
            seconds += ticks / 100.0;
        }
    }
    seconds
}
