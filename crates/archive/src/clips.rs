//! The archive's clip folder: the video of each round, as uploaded by the broadcaster,
//! kept next to the database so that the archive holds the video itself.
//!
//! A clip is received into a temporary file, hashed as it arrives, and kept under
//! `<round_id>.mp4` only if its size and SHA-256 are those the uploader declared; a clip is
//! never replaced. Reading one back hashes it again, so a file changed on disk is reported
//! as damaged rather than served.

use std::path::{Path, PathBuf};

use banco_wire::pb;
use futures::{Stream, StreamExt as _};
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tonic::Status;

use crate::error::ArchiveError;
use crate::store::{ClipOf, ClipRow, MissingClipRow};
use banco_records::hex::to_hex;

/// Largest clip taken: a round of several minutes at a studio bitrate stays far below.
pub const MAX_CLIP_BYTES: u64 = 4 << 30;
/// Bytes per ClipChunk sent to an auditor.
pub const CHUNK_BYTES: usize = 256 * 1024;

/// The folder of clip files.
#[derive(Clone, Debug)]
pub struct ClipFolder {
    dir: PathBuf,
}

/// A clip as received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub clip: ClipRow,
    /// The same clip was already kept.
    pub duplicate: bool,
}

impl ClipFolder {
    /// The folder `dir`, created if missing.
    pub fn open(dir: &Path) -> Result<ClipFolder, ArchiveError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| ArchiveError::ClipIo(format!("{}: {e}", dir.display())))?;
        Ok(ClipFolder {
            dir: dir.to_owned(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Receives one upload (see `ArchiveService.UploadClip`).
    pub async fn receive(
        &self,
        mut upload: impl Stream<Item = Result<pb::ClipUpload, Status>> + Unpin,
    ) -> Result<Received, ArchiveError> {
        let first = match upload.next().await {
            Some(first) => first.map_err(|s| ArchiveError::ClipIo(s.message().to_owned()))?,
            None => return Err(ArchiveError::bad_request("round_id", "the upload is empty")),
        };
        let round_id = first.round_id.clone();
        check_round_id(&round_id)?;
        if first.size_bytes > MAX_CLIP_BYTES {
            return Err(ArchiveError::bad_request(
                "size_bytes",
                format!("{}: at most {MAX_CLIP_BYTES}", first.size_bytes),
            ));
        }
        if first.sha256.len() != 32 {
            return Err(ArchiveError::bad_request(
                "sha256",
                format!("{} bytes: a SHA-256 has 32", first.sha256.len()),
            ));
        }
        let declared_size = first.size_bytes;
        let declared_sha = to_hex(&first.sha256);
        let part = self
            .dir
            .join(format!(".{round_id}.{}.part", std::process::id()));
        let written = self
            .write_part(&part, first.data, &mut upload, declared_size)
            .await;
        let (size, sha256) = match written {
            Ok(done) => done,
            Err(e) => {
                let _ = tokio::fs::remove_file(&part).await;
                return Err(e);
            }
        };
        let clip = ClipRow {
            path: clip_name(&round_id),
            size_bytes: i64::try_from(size).unwrap_or(i64::MAX),
            sha256,
        };
        let outcome = self
            .keep(&part, &round_id, &clip, declared_size, &declared_sha)
            .await;
        let _ = tokio::fs::remove_file(&part).await;
        outcome
    }

    async fn write_part(
        &self,
        part: &Path,
        first: Vec<u8>,
        upload: &mut (impl Stream<Item = Result<pb::ClipUpload, Status>> + Unpin),
        declared_size: u64,
    ) -> Result<(u64, String), ArchiveError> {
        let io = |e: std::io::Error| ArchiveError::ClipIo(format!("{}: {e}", part.display()));
        let mut file = tokio::fs::File::create(part).await.map_err(io)?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut data = first;
        loop {
            size += data.len() as u64;
            if size > declared_size {
                return Err(ArchiveError::ClipMismatch(format!(
                    "the clip is longer than the {declared_size} bytes declared"
                )));
            }
            hasher.update(&data);
            file.write_all(&data).await.map_err(io)?;
            match upload.next().await {
                Some(Ok(next)) => data = next.data,
                Some(Err(status)) => {
                    return Err(ArchiveError::ClipIo(format!(
                        "the upload broke off: {}",
                        status.message()
                    )));
                }
                None => break,
            }
        }
        file.sync_all().await.map_err(io)?;
        Ok((size, to_hex(&hasher.finalize())))
    }

    /// Moves a complete part file to its clip name, unless the round has a clip already.
    async fn keep(
        &self,
        part: &Path,
        round_id: &str,
        clip: &ClipRow,
        declared_size: u64,
        declared_sha: &str,
    ) -> Result<Received, ArchiveError> {
        if clip.size_bytes != i64::try_from(declared_size).unwrap_or(i64::MAX) {
            return Err(ArchiveError::ClipMismatch(format!(
                "clip of round {round_id}: {} bytes arrived, {declared_size} were declared",
                clip.size_bytes
            )));
        }
        if clip.sha256 != declared_sha {
            return Err(ArchiveError::ClipMismatch(format!(
                "clip of round {round_id}: the bytes that arrived hash to {}, not the {declared_sha} declared",
                clip.sha256
            )));
        }
        let target = self.dir.join(&clip.path);
        if tokio::fs::try_exists(&target).await.unwrap_or(false) {
            let (size, sha256) = hash_file(&target).await?;
            if size == declared_size && sha256 == clip.sha256 {
                return Ok(Received {
                    clip: clip.clone(),
                    duplicate: true,
                });
            }
            return Err(ArchiveError::ClipExists(format!(
                "round {round_id} already has a different clip ({size} bytes, sha256 {sha256}); it is kept"
            )));
        }
        tokio::fs::rename(part, &target)
            .await
            .map_err(|e| ArchiveError::ClipIo(format!("{}: {e}", target.display())))?;
        // The rename is durable only once the folder is.
        if let Ok(dir) = tokio::fs::File::open(&self.dir).await {
            let _ = dir.sync_all().await;
        }
        tracing::info!(round = round_id, bytes = clip.size_bytes, sha256 = %clip.sha256, "clip kept");
        Ok(Received {
            clip: clip.clone(),
            duplicate: false,
        })
    }

    /// Checks that the file of `clip` is there with its size and SHA-256.
    pub async fn check(&self, round_id: &str, clip: &ClipRow) -> Result<(), ArchiveError> {
        if clip.path != clip_name(round_id) {
            return Err(ArchiveError::ClipMismatch(format!(
                "`record.clip.path` `{}`: the clip of round {round_id} is `{}`",
                clip.path.chars().take(80).collect::<String>(),
                clip_name(round_id)
            )));
        }
        let path = self.dir.join(&clip.path);
        if !tokio::fs::try_exists(&path).await.unwrap_or(false) {
            return Err(ArchiveError::ClipMismatch(format!(
                "`record.clip`: round {round_id} has no uploaded clip (UploadClip first)"
            )));
        }
        let (size, sha256) = hash_file(&path).await?;
        if i64::try_from(size).unwrap_or(i64::MAX) != clip.size_bytes || sha256 != clip.sha256 {
            return Err(ArchiveError::ClipMismatch(format!(
                "`record.clip` says {} bytes with sha256 {}, but the uploaded clip of round {round_id} has {size} bytes with sha256 {sha256}",
                clip.size_bytes, clip.sha256
            )));
        }
        Ok(())
    }

    /// The stored file of `clip`, after checking it still matches the record.
    pub async fn open_checked(
        &self,
        round_id: &str,
        clip: &ClipRow,
    ) -> Result<(tokio::fs::File, u64), ArchiveError> {
        let path = self.dir.join(&clip.path);
        let damaged = |why: String| {
            ArchiveError::ClipDamaged(format!(
                "the clip of round {round_id} ({}) {why}",
                path.display()
            ))
        };
        if !tokio::fs::try_exists(&path).await.unwrap_or(false) {
            return Err(damaged("is missing from the clip folder".to_owned()));
        }
        let (size, sha256) = hash_file(&path).await?;
        if i64::try_from(size).unwrap_or(i64::MAX) != clip.size_bytes || sha256 != clip.sha256 {
            return Err(damaged(format!(
                "no longer matches its record: {size} bytes with sha256 {sha256}, recorded {} bytes with sha256 {}",
                clip.size_bytes, clip.sha256
            )));
        }
        let file = tokio::fs::File::open(&path)
            .await
            .map_err(|e| ArchiveError::ClipIo(format!("{}: {e}", path.display())))?;
        Ok((file, size))
    }
}

/// The file name of a round's clip.
pub fn clip_name(round_id: &str) -> String {
    format!("{round_id}.mp4")
}

/// A round id as a file name: letters, digits and `-` only, so it cannot leave the folder.
fn check_round_id(round_id: &str) -> Result<(), ArchiveError> {
    if round_id.is_empty() || round_id.len() > 64 {
        return Err(ArchiveError::bad_request(
            "round_id",
            format!("{} characters: 1 to 64", round_id.chars().count()),
        ));
    }
    if !round_id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err(ArchiveError::bad_request(
            "round_id",
            format!(
                "`{}`: only letters, digits and `-`",
                round_id.chars().take(64).collect::<String>()
            ),
        ));
    }
    Ok(())
}

/// Size and SHA-256 (hex) of a file.
pub async fn hash_file(path: &Path) -> Result<(u64, String), ArchiveError> {
    let io = |e: std::io::Error| ArchiveError::ClipIo(format!("{}: {e}", path.display()));
    let mut file = tokio::fs::File::open(path).await.map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buffer).await.map_err(io)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buffer[..n]);
    }
    Ok((size, to_hex(&hasher.finalize())))
}

impl From<&ClipRow> for pb::ClipRef {
    fn from(clip: &ClipRow) -> pb::ClipRef {
        pb::ClipRef {
            path: clip.path.clone(),
            size_bytes: u64::try_from(clip.size_bytes).unwrap_or(0),
            sha256: crate::hexbytes::hex_to_bytes_lossy(&clip.sha256),
        }
    }
}

/// What a record says of its round's clip, as rows; names the field that is wrong.
pub fn clip_of(record: &pb::RoundRecord) -> Result<ClipOf, ArchiveError> {
    match (&record.clip, &record.clip_missing) {
        (None, None) => Ok(ClipOf::Unsaid),
        (Some(_), Some(_)) => Err(ArchiveError::BadRecord {
            field: "record.clip_missing".to_owned(),
            why: "set together with `record.clip`: a round has its clip or says why not".to_owned(),
        }),
        (Some(clip), None) => Ok(ClipOf::Clip(clip_row(clip)?)),
        (None, Some(missing)) => Ok(ClipOf::Missing(missing_row(missing)?)),
    }
}

/// A record's ClipMissing as a row; names the field that is wrong.
pub fn missing_row(missing: &pb::ClipMissing) -> Result<MissingClipRow, ArchiveError> {
    let reason = match pb::ClipMissingReason::try_from(missing.reason) {
        Ok(pb::ClipMissingReason::Unspecified) => {
            return Err(ArchiveError::bad_request(
                "record.clip_missing.reason",
                "unspecified: say why the round has no clip",
            ));
        }
        Ok(reason) => reason,
        Err(_) => {
            return Err(ArchiveError::bad_request(
                "record.clip_missing.reason",
                format!("{}: not a ClipMissingReason", missing.reason),
            ));
        }
    };
    if missing.detail.len() > banco_wire::MAX_CLIP_MISSING_DETAIL_BYTES {
        return Err(ArchiveError::bad_request(
            "record.clip_missing.detail",
            format!(
                "{} bytes: at most {}",
                missing.detail.len(),
                banco_wire::MAX_CLIP_MISSING_DETAIL_BYTES
            ),
        ));
    }
    Ok(MissingClipRow {
        reason: reason_text(reason),
        detail: missing.detail.clone(),
    })
}

/// `no_video` for `CLIP_MISSING_REASON_NO_VIDEO`, and so on.
fn reason_text(reason: pb::ClipMissingReason) -> String {
    let name = reason.as_str_name();
    name.strip_prefix("CLIP_MISSING_REASON_")
        .unwrap_or(name)
        .to_ascii_lowercase()
}

impl TryFrom<&MissingClipRow> for pb::ClipMissing {
    type Error = ArchiveError;

    fn try_from(row: &MissingClipRow) -> Result<pb::ClipMissing, ArchiveError> {
        let name = format!("CLIP_MISSING_REASON_{}", row.reason.to_ascii_uppercase());
        let reason = pb::ClipMissingReason::from_str_name(&name).ok_or_else(|| {
            ArchiveError::Corrupt(format!("clips_missing.reason `{}`", row.reason))
        })?;
        Ok(pb::ClipMissing {
            reason: reason.into(),
            detail: row.detail.clone(),
        })
    }
}

/// A record's ClipRef as a row; names the field that is wrong.
pub fn clip_row(clip: &pb::ClipRef) -> Result<ClipRow, ArchiveError> {
    if clip.sha256.len() != 32 {
        return Err(ArchiveError::bad_request(
            "record.clip.sha256",
            format!("{} bytes: a SHA-256 has 32", clip.sha256.len()),
        ));
    }
    Ok(ClipRow {
        path: clip.path.clone(),
        size_bytes: i64::try_from(clip.size_bytes)
            .map_err(|_| ArchiveError::bad_request("record.clip.size_bytes", "too large"))?,
        sha256: to_hex(&clip.sha256),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sha(data: &[u8]) -> Vec<u8> {
        Sha256::digest(data).to_vec()
    }

    fn upload(
        round_id: &str,
        data: &[u8],
        size: u64,
        sha256: Vec<u8>,
    ) -> Vec<Result<pb::ClipUpload, Status>> {
        let mut chunks: Vec<Result<pb::ClipUpload, Status>> = data
            .chunks(3)
            .map(|c| {
                Ok(pb::ClipUpload {
                    data: c.to_vec(),
                    ..Default::default()
                })
            })
            .collect();
        if chunks.is_empty() {
            chunks.push(Ok(pb::ClipUpload::default()));
        }
        if let Some(Ok(first)) = chunks.first_mut() {
            first.round_id = round_id.to_owned();
            first.size_bytes = size;
            first.sha256 = sha256;
        }
        chunks
    }

    async fn receive(
        folder: &ClipFolder,
        chunks: Vec<Result<pb::ClipUpload, Status>>,
    ) -> Result<Received, ArchiveError> {
        folder.receive(futures::stream::iter(chunks)).await
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".part"))
            .collect()
    }

    #[tokio::test]
    async fn a_clip_is_kept_once_and_read_back_checked() {
        let dir = tempfile::tempdir().unwrap();
        let folder = ClipFolder::open(dir.path()).unwrap();
        let data = b"not really an mp4, but bytes all the same";
        let kept = receive(
            &folder,
            upload("T01-S0001-H001", data, data.len() as u64, sha(data)),
        )
        .await
        .unwrap();
        assert!(!kept.duplicate);
        assert_eq!(kept.clip.path, "T01-S0001-H001.mp4");
        assert_eq!(kept.clip.sha256, to_hex(&sha(data)));
        let again = receive(
            &folder,
            upload("T01-S0001-H001", data, data.len() as u64, sha(data)),
        )
        .await
        .unwrap();
        assert!(again.duplicate);
        let other = b"another clip";
        let refused = receive(
            &folder,
            upload("T01-S0001-H001", other, other.len() as u64, sha(other)),
        )
        .await
        .unwrap_err();
        assert!(matches!(refused, ArchiveError::ClipExists(_)), "{refused}");
        folder.check("T01-S0001-H001", &kept.clip).await.unwrap();
        let (_, size) = folder
            .open_checked("T01-S0001-H001", &kept.clip)
            .await
            .unwrap();
        assert_eq!(size, data.len() as u64);
        // Edited on disk: no longer served.
        std::fs::write(dir.path().join("T01-S0001-H001.mp4"), b"edited").unwrap();
        let damaged = folder
            .open_checked("T01-S0001-H001", &kept.clip)
            .await
            .unwrap_err();
        assert!(matches!(damaged, ArchiveError::ClipDamaged(_)), "{damaged}");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[tokio::test]
    async fn an_upload_that_does_not_match_its_declaration_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let folder = ClipFolder::open(dir.path()).unwrap();
        let data = b"0123456789";
        let wrong_hash = receive(&folder, upload("T01-S0001-H002", data, 10, sha(b"other")))
            .await
            .unwrap_err();
        assert!(wrong_hash.to_string().contains("hash to"), "{wrong_hash}");
        let short = receive(&folder, upload("T01-S0001-H002", data, 11, sha(data)))
            .await
            .unwrap_err();
        assert!(
            short
                .to_string()
                .contains("10 bytes arrived, 11 were declared"),
            "{short}"
        );
        let long = receive(&folder, upload("T01-S0001-H002", data, 9, sha(data)))
            .await
            .unwrap_err();
        assert!(
            long.to_string().contains("longer than the 9 bytes"),
            "{long}"
        );
        let escape = receive(&folder, upload("../etc/passwd", data, 10, sha(data)))
            .await
            .unwrap_err();
        assert!(
            escape.to_string().contains("only letters, digits and `-`"),
            "{escape}"
        );
        let bad_sha = receive(&folder, upload("T01-S0001-H002", data, 10, vec![1, 2]))
            .await
            .unwrap_err();
        assert!(
            bad_sha.to_string().contains("a SHA-256 has 32"),
            "{bad_sha}"
        );
        assert!(!dir.path().join("T01-S0001-H002.mp4").exists());
        assert!(leftovers(dir.path()).is_empty());
    }
}
