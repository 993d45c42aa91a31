//! The audit log file, rotated as the kube-apiserver's (gopkg.in/natefinch/lumberjack.v2)
//! rotates it: a write that would take the file past `max_bytes` first renames it to
//! `<name>-<UTC time, 2006-01-02T15-04-05.000>.<ext>` beside it and starts a new one; then the
//! oldest backups beyond `max_backups` and those older than `max_age` are deleted (0 keeps
//! them). The names are the kube-apiserver's, so log shippers set up for its audit log find
//! these too. (The `file-rotate` crate names backups differently and limits either the count or
//! the age of backups, not both.)

use k8s_openapi::jiff;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How a backup's time is written in its name.
const TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// Bytes of lines held before they are written.
const BUFFER: usize = 256 * 1024;

/// Limits of the log and its backups.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Rotate before the file would grow past this (`u64::MAX`: never).
    pub max_bytes: u64,
    /// Backups kept, newest first; 0 keeps all.
    pub max_backups: usize,
    /// Backups older than this are deleted; zero keeps them.
    pub max_age: Duration,
}

/// An append-only log file that rotates itself.
pub struct RotatingFile {
    path: PathBuf,
    limits: Limits,
    /// Buffered: lines reach the file when [`RotatingFile::flush`] is called or the buffer fills.
    file: BufWriter<File>,
    size: u64,
    /// When the last backup was made, as its name says.
    last_backup: Option<SystemTime>,
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

impl RotatingFile {
    /// Opens (or creates) the log at `path`, appending.
    pub fn open(path: &Path, limits: Limits) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = open(path)?;
        let size = file.metadata()?.len();
        Ok(Self {
            path: path.to_path_buf(),
            limits,
            file: BufWriter::with_capacity(BUFFER, file),
            size,
            last_backup: None,
        })
    }

    /// Appends `bytes` (whole lines), rotating first when they would not fit.
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.size > 0 && self.size + bytes.len() as u64 > self.limits.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(bytes)?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    /// Flushes what was written to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    /// `<stem>-<time><.ext>` for a backup made at `time`.
    fn backup_name(&self, time: SystemTime) -> PathBuf {
        let stem = self.path.file_stem().and_then(|s| s.to_str()).unwrap_or("audit");
        let ext = self.path.extension().and_then(|e| e.to_str()).map(|e| format!(".{e}")).unwrap_or_default();
        let time = jiff::Timestamp::try_from(time).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        self.path.with_file_name(format!("{stem}-{}{ext}", time.strftime(TIME_FORMAT)))
    }

    /// The backups beside the log and their times, oldest first.
    fn backups(&self) -> io::Result<Vec<(jiff::Timestamp, PathBuf)>> {
        let stem = self.path.file_stem().and_then(|s| s.to_str()).unwrap_or("audit");
        let ext = self.path.extension().and_then(|e| e.to_str()).map(|e| format!(".{e}")).unwrap_or_default();
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
            let Some(time) = name.strip_prefix(&format!("{stem}-")).and_then(|t| t.strip_suffix(ext.as_str())) else {
                continue;
            };
            let parsed = jiff::civil::DateTime::strptime(TIME_FORMAT, time)
                .and_then(|t| t.to_zoned(jiff::tz::TimeZone::UTC))
                .map(|t| t.timestamp());
            if let Ok(time) = parsed {
                found.push((time, path));
            }
        }
        found.sort();
        Ok(found)
    }

    /// Moves the log to a backup, starts a new one, and deletes the backups beyond the limits.
    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        // Backups are named by the millisecond: a later one never takes an earlier or an
        // existing name, even when rotations come faster.
        let mut time = SystemTime::now();
        if let Some(last) = self.last_backup {
            time = time.max(last + Duration::from_millis(1));
        }
        while self.backup_name(time).exists() {
            time += Duration::from_millis(1);
        }
        self.last_backup = Some(time);
        let backup = self.backup_name(time);
        std::fs::rename(&self.path, &backup)?;
        self.file = BufWriter::with_capacity(BUFFER, open(&self.path)?);
        self.size = 0;
        let backups = self.backups()?;
        let excess =
            if self.limits.max_backups == 0 { 0 } else { backups.len().saturating_sub(self.limits.max_backups) };
        let now = jiff::Timestamp::now();
        for (i, (time, path)) in backups.iter().enumerate() {
            let aged = !self.limits.max_age.is_zero() && now.duration_since(*time).unsigned_abs() > self.limits.max_age;
            if i < excess || aged {
                std::fs::remove_file(path)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_full_log_becomes_a_backup_and_only_the_newest_backups_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let limits = Limits { max_bytes: 25, max_backups: 2, max_age: Duration::ZERO };
        let mut log = RotatingFile::open(&path, limits).unwrap();
        for i in 0..8 {
            log.write_all(format!("line {i:02} of the log\n").as_bytes()).unwrap();
        }
        log.flush().unwrap();
        let names = names(dir.path());
        assert_eq!(names.len(), 3, "the log and two backups: {names:?}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "line 07 of the log\n");
        let backup = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(backup(&names[0]), "line 05 of the log\n", "the oldest kept backup");
        assert_eq!(backup(&names[1]), "line 06 of the log\n");
        let shape = regex::Regex::new(r"^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$").unwrap();
        assert!(names[..2].iter().all(|n| shape.is_match(n)), "{names:?}");
    }

    #[test]
    fn backups_older_than_the_age_limit_are_deleted_and_others_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let old = dir.path().join("audit-2020-01-02T03-04-05.678.log");
        let unrelated = dir.path().join("other-2020-01-02T03-04-05.678.log");
        std::fs::write(&old, "old\n").unwrap();
        std::fs::write(&unrelated, "not ours\n").unwrap();
        let limits = Limits { max_bytes: 10, max_backups: 0, max_age: Duration::from_secs(86_400) };
        let mut log = RotatingFile::open(&path, limits).unwrap();
        log.write_all(b"first line\n").unwrap();
        log.write_all(b"second line\n").unwrap();
        let names = names(dir.path());
        assert!(!names.contains(&"audit-2020-01-02T03-04-05.678.log".to_string()), "{names:?}");
        assert!(names.contains(&"other-2020-01-02T03-04-05.678.log".to_string()));
        assert_eq!(names.len(), 3, "the log, today's backup and the unrelated file: {names:?}");
    }

    #[test]
    fn an_existing_log_is_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/audit.log");
        let limits = Limits { max_bytes: 1 << 20, max_backups: 0, max_age: Duration::ZERO };
        RotatingFile::open(&path, limits).unwrap().write_all(b"one\n").unwrap();
        RotatingFile::open(&path, limits).unwrap().write_all(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    }
}
