//! The name of what an error report points at: the dataset whose objset id it carries
//! (`ZFS_IOC_DSOBJ_TO_DSNAME`) and the path of the file object within it
//! (`ZFS_IOC_OBJ_TO_PATH`), the two calls `zpool status -v` makes for each file it lists
//! under "Permanent errors" (libzfs `zpool_obj_to_path_impl`, lib/libzfs/libzfs_pool.c).
//! Both answer in `zc_value`; both are `zfs_secpolicy_diff` (root, CAP_SYS_ADMIN, or the
//! delegated `diff` permission), as the event queue is.

use super::layout::{CmdBuffer, Request};
use super::protocol::{Ioctl, IoctlError};

/// The dataset called `dsobj` in `pool` (`dsl_dsobj_to_dsname`).
pub fn dataset_name(dev: &mut dyn Ioctl, pool: &str, dsobj: u64) -> Result<String, IoctlError> {
    name_call(
        dev,
        Request::DsobjToDsname,
        "ZFS_IOC_DSOBJ_TO_DSNAME",
        pool,
        dsobj,
    )
}

/// The path of object `obj` inside `dataset`, from the dataset's root (`zfs_obj_to_path`:
/// `/dir/file`; EINVAL for a dataset that is not a file system, ESRCH or ENOENT for an
/// object that is gone).
pub fn object_path(dev: &mut dyn Ioctl, dataset: &str, obj: u64) -> Result<String, IoctlError> {
    name_call(dev, Request::ObjToPath, "ZFS_IOC_OBJ_TO_PATH", dataset, obj)
}

fn name_call(
    dev: &mut dyn Ioctl,
    request: Request,
    call: &'static str,
    name: &str,
    obj: u64,
) -> Result<String, IoctlError> {
    if name.contains('\0') || name.len() >= dev.platform().name_capacity() {
        return Err(IoctlError::BadPoolName(name.to_string()));
    }
    let mut cmd = CmdBuffer::new(dev.platform(), name, std::ptr::null_mut(), 0, 0);
    cmd.set_obj(obj);
    dev.call(request, &mut cmd)
        .map_err(|errno| IoctlError::Errno { call, errno })?;
    Ok(cmd.value())
}

/// How `zpool status -v` names the object `obj` of objset `dsobj` in `pool`, in its words:
/// `<metadata>:<0x…>` for the pool's own metadata (objset 0), `MOUNTPOINT/PATH` for a file
/// of a mounted file system, `DATASET:PATH` when it is not mounted, `DATASET:<0x…>` when the
/// object has no path (a directory entry gone, a zvol's data), `<0x…>:<0x…>` when not even
/// the dataset is known (destroyed since, or the call refused). `mountpoint` tells where a
/// dataset is mounted, if it is.
pub fn file_name(
    dev: &mut dyn Ioctl,
    pool: &str,
    dsobj: u64,
    obj: u64,
    mountpoint: &dyn Fn(&str) -> Option<String>,
) -> String {
    if dsobj == 0 {
        return format!("<metadata>:<{obj:#x}>");
    }
    let Ok(dataset) = dataset_name(dev, pool, dsobj) else {
        return format!("<{dsobj:#x}>:<{obj:#x}>");
    };
    match object_path(dev, &dataset, obj) {
        Ok(path) => match mountpoint(&dataset) {
            // libzfs joins them as they are: a file system mounted at `/` gives `//file`.
            Some(mnt) => format!("{mnt}{path}"),
            None => format!("{dataset}:{path}"),
        },
        Err(_) => format!("{dataset}:<{obj:#x}>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::zfs_ioctl::Platform;
    use std::collections::BTreeMap;

    /// The two calls as `dsl_dsobj_to_dsname` and `zfs_obj_to_path` answer them.
    struct Names {
        datasets: BTreeMap<(String, u64), String>,
        paths: BTreeMap<(String, u64), Result<String, i32>>,
        calls: Vec<(Request, String, u64)>,
    }

    impl Ioctl for Names {
        fn platform(&self) -> Platform {
            Platform::Linux
        }
        fn call(&mut self, request: Request, cmd: &mut CmdBuffer) -> Result<(), i32> {
            let p = self.platform();
            let bytes = cmd.bytes_mut();
            let end = bytes.iter().position(|&b| b == 0).unwrap();
            let name = String::from_utf8_lossy(&bytes[..end]).into_owned();
            let obj = u64::from_ne_bytes(bytes[p.obj()..p.obj() + 8].try_into().unwrap());
            self.calls.push((request, name.clone(), obj));
            let answer = match request {
                Request::DsobjToDsname => self
                    .datasets
                    .get(&(name, obj))
                    .cloned()
                    .ok_or(libc::ENOENT)?,
                Request::ObjToPath => self
                    .paths
                    .get(&(name, obj))
                    .cloned()
                    .unwrap_or(Err(libc::ESRCH))?,
                _ => return Err(libc::ENOTTY),
            };
            bytes[p.value()..p.value() + answer.len()].copy_from_slice(answer.as_bytes());
            Ok(())
        }
    }

    fn kernel() -> Names {
        Names {
            datasets: [(("scrubp".to_string(), 0x54), "scrubp/d".to_string())].into(),
            paths: [(("scrubp/d".to_string(), 2), Ok("/victim".to_string()))].into(),
            calls: Vec::new(),
        }
    }

    /// The forms of `zpool_obj_to_path_impl`; the first is what `zpool status -v` printed
    /// for the lab's damaged file (tests/fixtures/lab/events/scrub/001/cli).
    #[test]
    fn names_take_zpool_status_forms() {
        let mut k = kernel();
        let mounted = |ds: &str| (ds == "scrubp/d").then(|| "/scrubp/d".to_string());
        assert_eq!(
            file_name(&mut k, "scrubp", 0x54, 2, &mounted),
            "/scrubp/d/victim"
        );
        assert_eq!(
            k.calls,
            vec![
                (Request::DsobjToDsname, "scrubp".into(), 0x54),
                (Request::ObjToPath, "scrubp/d".into(), 2)
            ]
        );
        assert_eq!(
            file_name(&mut k, "scrubp", 0x54, 2, &|_| None),
            "scrubp/d:/victim"
        );
        assert_eq!(
            file_name(&mut k, "scrubp", 0x54, 9, &mounted),
            "scrubp/d:<0x9>"
        );
        assert_eq!(
            file_name(&mut k, "scrubp", 0x99, 2, &mounted),
            "<0x99>:<0x2>"
        );
        assert_eq!(
            file_name(&mut k, "scrubp", 0, 0x2b, &mounted),
            "<metadata>:<0x2b>"
        );
    }

    #[test]
    fn a_name_that_does_not_fit_is_refused_before_the_kernel() {
        let mut k = kernel();
        let long = "p".repeat(5000);
        assert!(matches!(
            dataset_name(&mut k, &long, 1),
            Err(IoctlError::BadPoolName(_))
        ));
        assert!(object_path(&mut k, "a\0b", 1).is_err());
        assert!(k.calls.is_empty());
    }
}
