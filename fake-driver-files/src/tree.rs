//! The FUSE filesystem: the tree read and written through, the drivers' files answered by
//! [`Served`]. Nothing is cached (every answer lives no time, every file is opened for direct
//! I/O), so a change made underneath is seen at the next call, as sysfs shows a driver's.

use crate::served::Served;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, OpenFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyWrite, Request,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// No answer is kept by the kernel.
const NO_TIME: Duration = Duration::ZERO;

/// What a sysfs attribute's `stat` says of its size, whatever it holds.
const ATTRIBUTE_SIZE: u64 = 4096;

/// The paths the kernel knows by inode number (relative to the tree's root; the root is 1).
#[derive(Debug, Default)]
struct Inodes {
    paths: Vec<PathBuf>,
    numbers: HashMap<PathBuf, u64>,
}

impl Inodes {
    fn number(&mut self, path: &Path) -> INodeNo {
        if let Some(number) = self.numbers.get(path) {
            return INodeNo(*number);
        }
        self.paths.push(path.to_path_buf());
        let number = u64::try_from(self.paths.len()).unwrap_or(u64::MAX);
        self.numbers.insert(path.to_path_buf(), number);
        INodeNo(number)
    }
}

/// The tree at `root`, its drivers' files served.
#[derive(Debug)]
pub(crate) struct Tree {
    root: PathBuf,
    served: Served,
    inodes: Mutex<Inodes>,
}

fn errno(error: &io::Error) -> Errno {
    error.raw_os_error().map_or(Errno::EIO, Errno::from_i32)
}

impl Tree {
    pub(crate) fn new(root: PathBuf, served: Served) -> Tree {
        let mut inodes = Inodes::default();
        inodes.number(Path::new(""));
        Tree {
            root,
            served,
            inodes: Mutex::new(inodes),
        }
    }

    fn inodes(&self) -> MutexGuard<'_, Inodes> {
        self.inodes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The path (relative to the root) of inode `ino`.
    fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        let index = usize::try_from(u64::from(ino)).map_err(|_| Errno::ENOENT)?;
        let inodes = self.inodes();
        index
            .checked_sub(1)
            .and_then(|index| inodes.paths.get(index))
            .cloned()
            .ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        Ok(self.path(parent)?.join(name))
    }

    fn under(&self, path: &Path) -> PathBuf {
        self.root.join(path)
    }

    /// The attributes of `path`: a driver's file as sysfs shows an attribute, any other as the
    /// tree has it.
    fn attr(&self, path: &Path) -> Result<FileAttr, Errno> {
        // A number only for what is there: a failed lookup leaves the table as it was.
        if let Some(file) = self.served.file(path) {
            if let Some(exists) = self.served.exists(&file) {
                if !exists.map_err(Errno::from_i32)? {
                    return Err(Errno::ENOENT);
                }
                let perm = if file.writable() { 0o644 } else { 0o444 };
                return Ok(attribute(self.inodes().number(path), perm));
            }
        }
        let meta = fs::symlink_metadata(self.under(path)).map_err(|error| errno(&error))?;
        Ok(from_metadata(self.inodes().number(path), &meta))
    }

    /// The driver's file at `path`, where a driver has its device (else the tree's file).
    fn driven(&self, path: &Path) -> Option<crate::served::File> {
        self.served
            .file(path)
            .filter(|file| self.served.read(file).is_some())
    }

    fn entry(&self, path: &Path, reply: ReplyEntry) {
        match self.attr(path) {
            Ok(attr) => reply.entry(&NO_TIME, &attr, Generation(0)),
            Err(error) => reply.error(error),
        }
    }
}

/// A sysfs attribute's attributes: owned by root, size 4096, the time now.
fn attribute(ino: INodeNo, perm: u16) -> FileAttr {
    let now = SystemTime::now();
    FileAttr {
        ino,
        size: ATTRIBUTE_SIZE,
        blocks: 0,
        atime: now,
        mtime: now,
        ctime: now,
        crtime: now,
        kind: FileType::RegularFile,
        perm,
        nlink: 1,
        uid: 0,
        gid: 0,
        rdev: 0,
        flags: 0,
        blksize: 4096,
    }
}

fn from_metadata(ino: INodeNo, meta: &fs::Metadata) -> FileAttr {
    let time = |seconds: i64, nanos: i64| {
        let nanos = u32::try_from(nanos).unwrap_or(0);
        u64::try_from(seconds).map_or(UNIX_EPOCH, |seconds| {
            UNIX_EPOCH + Duration::new(seconds, nanos)
        })
    };
    let kind = if meta.file_type().is_dir() {
        FileType::Directory
    } else if meta.file_type().is_symlink() {
        FileType::Symlink
    } else {
        FileType::RegularFile
    };
    FileAttr {
        ino,
        size: meta.size(),
        blocks: meta.blocks(),
        atime: time(meta.atime(), meta.atime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        crtime: time(meta.ctime(), meta.ctime_nsec()),
        kind,
        perm: u16::try_from(meta.mode() & 0o7777).unwrap_or(0),
        nlink: u32::try_from(meta.nlink()).unwrap_or(1),
        uid: meta.uid(),
        gid: meta.gid(),
        rdev: u32::try_from(meta.rdev()).unwrap_or(0),
        flags: 0,
        blksize: 4096,
    }
}

/// What a read from `offset` of at most `size` bytes of `text` gives.
fn slice(text: &[u8], offset: u64, size: u32) -> &[u8] {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(text.len());
    let end = start.saturating_add(usize::try_from(size).unwrap_or(usize::MAX));
    &text[start..end.min(text.len())]
}

impl Filesystem for Tree {
    fn lookup(&self, _: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.child(parent, name) {
            Ok(path) => self.entry(&path, reply),
            Err(error) => reply.error(error),
        }
    }

    fn getattr(&self, _: &Request, ino: INodeNo, _: Option<FileHandle>, reply: ReplyAttr) {
        match self.path(ino).and_then(|path| self.attr(&path)) {
            Ok(attr) => reply.attr(&NO_TIME, &attr),
            Err(error) => reply.error(error),
        }
    }

    fn setattr(
        &self,
        _: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let answer = self.path(ino).and_then(|path| {
            // An open with `O_TRUNC` of a driver's file truncates nothing (sysfs ignores it);
            // a file of the tree is truncated as asked.
            if let (Some(size), None) = (size, self.driven(&path)) {
                fs::OpenOptions::new()
                    .write(true)
                    .open(self.under(&path))
                    .and_then(|file| file.set_len(size))
                    .map_err(|error| errno(&error))?;
            }
            self.attr(&path)
        });
        match answer {
            Ok(attr) => reply.attr(&NO_TIME, &attr),
            Err(error) => reply.error(error),
        }
    }

    fn readlink(&self, _: &Request, ino: INodeNo, reply: ReplyData) {
        match self
            .path(ino)
            .and_then(|path| fs::read_link(self.under(&path)).map_err(|error| errno(&error)))
        {
            Ok(target) => reply.data(target.as_os_str().as_encoded_bytes()),
            Err(error) => reply.error(error),
        }
    }

    // sysfs's tree is the kernel's: no directory, file or link is made or removed in it by a
    // program (`EPERM`; a file created by `open` is `EACCES`), so a mistyped path never
    // "succeeds" as a new plain file.
    fn mkdir(&self, _: &Request, _: INodeNo, _: &OsStr, _: u32, _: u32, reply: ReplyEntry) {
        reply.error(Errno::EPERM);
    }

    fn unlink(&self, _: &Request, _: INodeNo, _: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EPERM);
    }

    fn rmdir(&self, _: &Request, _: INodeNo, _: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EPERM);
    }

    fn symlink(&self, _: &Request, _: INodeNo, _: &OsStr, _: &Path, reply: ReplyEntry) {
        reply.error(Errno::EPERM);
    }

    fn open(&self, _: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let opened = self.path(ino).and_then(|path| {
            // sysfs refuses to open for writing an attribute with no store, root's opens too
            // (`kernfs_fop_open`: `EACCES`).
            let writing = flags.acc_mode() != fuser::OpenAccMode::O_RDONLY;
            match self.driven(&path) {
                Some(file) if writing && !file.writable() => Err(Errno::EACCES),
                _ => Ok(()),
            }
        });
        match opened {
            Ok(()) => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            Err(error) => reply.error(error),
        }
    }

    fn read(
        &self,
        _: &Request,
        ino: INodeNo,
        _: FileHandle,
        offset: u64,
        size: u32,
        _: OpenFlags,
        _: Option<fuser::LockOwner>,
        reply: ReplyData,
    ) {
        let answer = self.path(ino).and_then(|path| {
            let driven = self.served.file(&path);
            match driven.and_then(|file| self.served.read(&file)) {
                Some(answer) => answer.map(String::into_bytes).map_err(Errno::from_i32),
                None => fs::read(self.under(&path)).map_err(|error| errno(&error)),
            }
        });
        match answer {
            Ok(text) => reply.data(slice(&text, offset, size)),
            Err(error) => reply.error(error),
        }
    }

    fn write(
        &self,
        _: &Request,
        ino: INodeNo,
        _: FileHandle,
        offset: u64,
        data: &[u8],
        _: fuser::WriteFlags,
        _: OpenFlags,
        _: Option<fuser::LockOwner>,
        reply: ReplyWrite,
    ) {
        let answer = self.path(ino).and_then(|path| {
            // A driver's store takes the whole of one write(2), wherever the file offset is.
            let stored = match self.served.file(&path) {
                Some(file) => {
                    let text = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
                    self.served.write(&file, text)
                }
                None => None,
            };
            match stored {
                Some(answer) => answer.map_err(Errno::from_i32),
                None => fs::OpenOptions::new()
                    .write(true)
                    .open(self.under(&path))
                    .and_then(|opened| opened.write_all_at(data, offset))
                    .map_err(|error| errno(&error)),
            }
        });
        match answer {
            Ok(()) => reply.written(u32::try_from(data.len()).unwrap_or(u32::MAX)),
            Err(error) => reply.error(error),
        }
    }

    fn flush(
        &self,
        _: &Request,
        _: INodeNo,
        _: FileHandle,
        _: fuser::LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn readdir(
        &self,
        _: &Request,
        ino: INodeNo,
        _: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let listed = self.path(ino).and_then(|path| {
            let mut entries = vec![
                (ino, FileType::Directory, ".".into()),
                (ino, FileType::Directory, "..".into()),
            ];
            for entry in fs::read_dir(self.under(&path)).map_err(|error| errno(&error))? {
                let entry = entry.map_err(|error| errno(&error))?;
                let kind = match entry.file_type() {
                    Ok(kind) if kind.is_dir() => FileType::Directory,
                    Ok(kind) if kind.is_symlink() => FileType::Symlink,
                    _ => FileType::RegularFile,
                };
                let child = self.inodes().number(&path.join(entry.file_name()));
                entries.push((child, kind, entry.file_name()));
            }
            Ok(entries)
        });
        match listed {
            Ok(entries) => {
                let skip = usize::try_from(offset).unwrap_or(usize::MAX);
                for (index, (child, kind, name)) in entries.iter().enumerate().skip(skip) {
                    let next = u64::try_from(index + 1).unwrap_or(u64::MAX);
                    if reply.add(*child, next, *kind, name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(error) => reply.error(error),
        }
    }

    fn create(
        &self,
        _: &Request,
        _: INodeNo,
        _: &OsStr,
        _: u32,
        _: u32,
        _: i32,
        reply: ReplyCreate,
    ) {
        reply.error(Errno::EACCES);
    }
}

#[cfg(test)]
mod tests {
    use super::slice;

    #[test]
    fn a_read_past_the_end_gives_nothing_and_a_short_read_what_is_left() {
        assert_eq!(slice(b"SPX\n", 0, 4096), b"SPX\n");
        assert_eq!(slice(b"SPX\n", 2, 4096), b"X\n");
        assert_eq!(slice(b"SPX\n", 9, 4096), b"");
        assert_eq!(slice(b"SPX\n", 1, 2), b"PX");
    }
}
