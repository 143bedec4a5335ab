//! A session's copy-on-write files answer exactly as bashkit's own
//! in-memory filesystem does: the same operations, from thousands of
//! random sequences over a small tree with tight limits, give the same
//! results, the same errors and the same files on both. And a fork's
//! changes stay its own.

use std::path::Path;

use bashkit::{FileSystem, FileSystemExt, FsLimits, InMemoryFs, VfsEntryKind};
use ex_bashkit_core::cow_fs::CowFs;

const PATHS: &[&str] = &[
    "/",
    "/a",
    "/a/b",
    "/a/b/c",
    "/a/x",
    "/a-b",
    "/f",
    "/f/g",
    "/tmp/x",
    "/tmp/y",
    "/tmp/d",
    "/tmp/d/e",
    "/dev/null",
    "/dev/zero",
    "/home/user",
    "/l",
    "/a/../tmp/x",
];

/// A small deterministic generator (xorshift): the same sequences every run.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn path(&mut self) -> &'static Path {
        Path::new(PATHS[self.below(PATHS.len())])
    }

    fn bytes(&mut self) -> Vec<u8> {
        let len = [0, 1, 7, 40, 90][self.below(5)];
        (0..len)
            .map(|i| (i as u8).wrapping_add(self.next() as u8))
            .collect()
    }
}

fn limits() -> FsLimits {
    FsLimits::new()
        .max_total_bytes(300)
        .max_file_size(100)
        .max_file_count(14)
        .max_dir_count(12)
}

/// One operation on `fs`, its outcome in words.
async fn apply(fs: &dyn FileSystem, op: usize, random: &mut Random) -> String {
    let (path, other) = (random.path(), random.path());
    let content = random.bytes();
    let outcome = match op {
        0 => fs.write_file(path, &content).await.map(|()| String::new()),
        1 => fs.append_file(path, &content).await.map(|()| String::new()),
        2 => fs
            .mkdir(path, random.below(2) == 0)
            .await
            .map(|()| String::new()),
        3 => fs
            .remove(path, random.below(2) == 0)
            .await
            .map(|()| String::new()),
        4 => fs.rename(path, other).await.map(|()| String::new()),
        5 => fs.copy(path, other).await.map(|()| String::new()),
        6 => fs.symlink(other, path).await.map(|()| String::new()),
        7 => fs.chmod(path, 0o600).await.map(|()| String::new()),
        8 => fs.read_file(path).await.map(|bytes| {
            // The random devices differ by design; their length does not.
            if path.starts_with("/dev") {
                format!("{} bytes", bytes.len())
            } else {
                format!("{bytes:?}")
            }
        }),
        9 => fs
            .stat(path)
            .await
            .map(|m| format!("{:?} {} {:o}", m.file_type, m.size, m.mode)),
        10 => fs.read_dir(path).await.map(|entries| {
            let mut names: Vec<String> = entries
                .iter()
                .map(|e| format!("{} {:?} {}", e.name, e.metadata.file_type, e.metadata.size))
                .collect();
            names.sort();
            names.join(",")
        }),
        11 => fs.exists(path).await.map(|found| found.to_string()),
        12 => fs.read_link(path).await.map(|target| format!("{target:?}")),
        _ => fs.mkfifo(path, 0o644).await.map(|()| String::new()),
    };
    match outcome {
        Ok(value) => format!("ok {value}"),
        Err(error) => format!("error {error}"),
    }
}

/// Every entry, in path order, with its kind, contents and mode.
fn files(fs: &dyn FileSystem) -> Vec<String> {
    let snapshot = fs.vfs_snapshot().expect("both take snapshots");
    let mut entries: Vec<String> = snapshot
        .entries()
        .iter()
        .map(|entry| {
            let kind = match &entry.kind {
                VfsEntryKind::File { content } => format!("file {content:?}"),
                VfsEntryKind::Directory => "dir".into(),
                VfsEntryKind::Symlink { target } => format!("link {target:?}"),
                VfsEntryKind::Fifo => "fifo".into(),
            };
            format!("{} {kind} {:o}", entry.path.display(), entry.mode)
        })
        .collect();
    entries.sort();
    entries
}

fn usage(fs: &dyn FileSystem) -> (u64, u64, u64) {
    let usage = fs.usage();
    (usage.total_bytes, usage.file_count, usage.dir_count)
}

#[tokio::test]
async fn every_operation_answers_as_bashkits_own_files_do() {
    for seed in 1..=400u64 {
        let reference = InMemoryFs::with_limits(limits());
        let ours = CowFs::with_limits(limits());
        let mut random = Random(seed * 0x9E37_79B9_7F4A_7C15);
        for step in 0..60 {
            let op = random.below(14);
            let state = random.0;
            let expected = apply(&reference, op, &mut random).await;
            random.0 = state;
            let got = apply(&ours, op, &mut random).await;
            assert_eq!(got, expected, "seed {seed}, step {step}, operation {op}");
            assert_eq!(usage(&ours), usage(&reference), "seed {seed}, step {step}");
        }
        assert_eq!(files(&ours), files(&reference), "seed {seed}");
    }
}

#[tokio::test]
async fn a_snapshot_restores_into_either() {
    let reference = InMemoryFs::with_limits(limits());
    let ours = CowFs::with_limits(limits());
    let mut random = Random(7);
    for _ in 0..40 {
        let op = random.below(8);
        apply(&ours, op, &mut random).await;
    }
    let snapshot = ours.vfs_snapshot().expect("a snapshot");
    reference
        .vfs_restore(&snapshot)
        .expect("restores into bashkit's");
    let copy = CowFs::with_limits(limits());
    copy.vfs_restore(&snapshot).expect("restores into ours");
    assert_eq!(files(&reference), files(&ours));
    assert_eq!(files(&copy), files(&ours));
    assert_eq!(usage(&copy), usage(&reference));

    let full = CowFs::with_limits(FsLimits::new());
    full.write_file(Path::new("/tmp/big"), &[1; 50])
        .await
        .unwrap();
    let snapshot = full.vfs_snapshot().expect("a snapshot");
    let small = CowFs::with_limits(FsLimits::new().max_total_bytes(10));
    small.write_file(Path::new("/kept"), b"x").await.unwrap();
    let before = files(&small);
    assert!(small.vfs_restore(&snapshot).is_err());
    assert_eq!(files(&small), before, "a refused restore changes nothing");
}

#[tokio::test]
async fn a_fork_shares_files_until_either_side_changes_them() {
    let parent = CowFs::with_limits(FsLimits::new());
    let big = vec![7u8; 1 << 20];
    parent
        .write_file(Path::new("/tmp/big"), &big)
        .await
        .unwrap();
    parent
        .write_file(Path::new("/tmp/log"), b"one\n")
        .await
        .unwrap();

    let child = CowFs::with_limits(FsLimits::new());
    child.share_from(&parent);
    child
        .append_file(Path::new("/tmp/log"), b"child\n")
        .await
        .unwrap();
    child
        .write_file(Path::new("/tmp/big"), b"small")
        .await
        .unwrap();
    child.remove(Path::new("/home/user"), true).await.unwrap();
    parent
        .append_file(Path::new("/tmp/log"), b"parent\n")
        .await
        .unwrap();

    assert_eq!(
        parent.read_file(Path::new("/tmp/log")).await.unwrap(),
        b"one\nparent\n"
    );
    assert_eq!(
        child.read_file(Path::new("/tmp/log")).await.unwrap(),
        b"one\nchild\n"
    );
    assert_eq!(parent.read_file(Path::new("/tmp/big")).await.unwrap(), big);
    assert_eq!(
        child.read_file(Path::new("/tmp/big")).await.unwrap(),
        b"small"
    );
    assert!(parent.exists(Path::new("/home/user")).await.unwrap());
    assert!(!child.exists(Path::new("/home/user")).await.unwrap());
    assert_eq!(parent.usage().total_bytes, (1 << 20) + 11);
    assert_eq!(child.usage().total_bytes, 5 + 10);
}
