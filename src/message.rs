//! User messages: text plus images (URL, base64 data, or a file read and encoded for you).

use std::path::Path;

use base64::Engine as _;

use crate::error::{Error, Result};
use crate::proto::{self, sdk_image::Source};

impl proto::UserMessage {
    /// A text-only message.
    pub fn text(text: impl Into<String>) -> Self {
        proto::UserMessage {
            text: text.into(),
            images: Vec::new(),
        }
    }

    /// Adds an image (builder style).
    pub fn with_image(mut self, image: proto::SdkImage) -> Self {
        self.images.push(image);
        self
    }
}

impl proto::SdkImage {
    /// An image by URL (the bridge accepts these for cloud agents only).
    pub fn from_url(url: impl Into<String>) -> Self {
        proto::SdkImage {
            source: Some(Source::Url(proto::SdkImageUrl { url: url.into() })),
            dimension: None,
        }
    }

    /// An image from raw bytes.
    pub fn from_bytes(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        proto::SdkImage {
            source: Some(Source::Data(proto::SdkImageData {
                data,
                mime_type: mime_type.into(),
            })),
            dimension: None,
        }
    }

    /// An image read from a file; the MIME type comes from the extension.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        let mime = match ext.as_str() {
            "png" => "image/png",
            "jpg" | "jpeg" => "image/jpeg",
            "gif" => "image/gif",
            "webp" => "image/webp",
            "bmp" => "image/bmp",
            "svg" => "image/svg+xml",
            _ => {
                return Err(Error::invalid_argument(format!(
                    "{}: unknown image type",
                    path.display()
                )))
            }
        };
        let bytes = std::fs::read(path).map_err(|e| Error::invalid_argument(format!("{}: {e}", path.display())))?;
        Ok(Self::from_bytes(&bytes, mime))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.PNG");
        std::fs::write(&p, [1u8, 2, 3]).unwrap();
        let img = proto::SdkImage::from_file(&p).unwrap();
        match img.source {
            Some(Source::Data(d)) => {
                assert_eq!(d.mime_type, "image/png");
                assert_eq!(d.data, "AQID");
            }
            _ => panic!("expected data"),
        }
        assert!(proto::SdkImage::from_file(dir.path().join("a.txt")).is_err());
        assert!(proto::SdkImage::from_file(dir.path().join("missing.png")).is_err());
        let m = proto::UserMessage::text("hi").with_image(proto::SdkImage::from_url("https://x/y.png"));
        assert_eq!(m.images.len(), 1);
    }
}
