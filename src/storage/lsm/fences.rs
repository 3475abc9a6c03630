//! Page fences: the first key of every page of a data file, so that a read by key goes from a
//! key to the one page that can hold it by binary search.
//!
//! A primary-key data file is sorted by key. Its footer's offset index places each page of the
//! first column (`Footer::page_ranges`); the fences add each page's first key, in the key
//! encoder's comparable bytes. That is a few hundred small keys per file whatever its row
//! count, so the fences of every file of a large table stay cached on the budget (kind
//! `page_fences`), where a whole-file key → position map (tens of bytes per row) could not: at
//! 10M rows the maps outgrew the cache and each lookup rebuilt one (13 lookups a second).
//! Fences are built once per file from its key columns; files never change.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::ArrayRef;
use futures::StreamExt;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::Footer;
use crate::storage::lsm::key_sets::KeyEncoder;
use crate::storage::lsm::split::Split;
use crate::storage::meta::table::Table;
use crate::storage::spec::manifest::DataFileMeta;

/// The pages of a data file (row ranges, in order) and the first key of each.
#[derive(Debug)]
pub(crate) struct PageFences {
    pages: Vec<Range<u64>>,
    first_keys: Vec<Vec<u8>>,
}

impl PageFences {
    /// Fences of `pages` whose first keys are `first_keys` (one each, ascending).
    pub(crate) fn new(pages: Vec<Range<u64>>, first_keys: Vec<Vec<u8>>) -> Self {
        debug_assert_eq!(pages.len(), first_keys.len());
        Self { pages, first_keys }
    }

    /// Bytes held (for the cache budget).
    pub(crate) fn memory_size(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.pages.capacity() * std::mem::size_of::<Range<u64>>()
            + self
                .first_keys
                .iter()
                .map(|k| k.capacity() + std::mem::size_of::<Vec<u8>>())
                .sum::<usize>()
    }

    /// The estimate of [`memory_size`](Self::memory_size) for `pages` pages of keys of about
    /// `key_bytes`, before reading them.
    pub(crate) fn estimated_size(pages: usize, key_bytes: usize) -> usize {
        std::mem::size_of::<Self>()
            + pages
                * (std::mem::size_of::<Range<u64>>() + std::mem::size_of::<Vec<u8>>() + key_bytes)
    }

    /// The page at index `i`.
    pub(crate) fn page(&self, i: usize) -> Range<u64> {
        self.pages[i].clone()
    }

    /// The indexes of the pages that can hold rows of `key`: those whose first key is at most
    /// `key` and whose successor's first key is at least `key` (a key's rows may run on past a
    /// page's end). Empty when `key` sorts before the file's first key.
    pub(crate) fn pages_of(&self, key: &[u8]) -> Range<usize> {
        let below = self.first_keys.partition_point(|k| k.as_slice() < key);
        let upto = self.first_keys.partition_point(|k| k.as_slice() <= key);
        if upto == 0 {
            return 0..0;
        }
        below.saturating_sub(1)..upto
    }
}

impl Table {
    /// The page fences of `file` (of `split`'s bucket), whose pages `footer` places.
    pub(crate) async fn page_fences(
        &self,
        split: &Split,
        file: &DataFileMeta,
        footer: &Footer,
        encoder: &KeyEncoder,
    ) -> Result<Arc<PageFences>, StorageError> {
        let cache = &self.shared().lsm_caches().page_fences;
        if let Some(fences) = cache.get(&file.file_name) {
            return Ok(fences);
        }
        self.build_page_fences(split, file, footer.page_ranges(), encoder)
            .await
    }

    /// [`page_fences`](Self::page_fences) when they fit the budget; `None` when they would
    /// not (a read by key then reads the file whole), estimated from the footer's pages and
    /// the file's key bounds before anything is read. A cached entry answers without the
    /// estimate.
    pub(crate) async fn page_fences_within_budget(
        &self,
        split: &Split,
        file: &DataFileMeta,
        footer: &Footer,
        encoder: &KeyEncoder,
    ) -> Result<Option<Arc<PageFences>>, StorageError> {
        let cache = &self.shared().lsm_caches().page_fences;
        if let Some(fences) = cache.get(&file.file_name) {
            return Ok(Some(fences));
        }
        let pages = footer.page_ranges();
        let key_bytes = file.min_key.len().max(file.max_key.len()).max(8);
        if !cache.admits(PageFences::estimated_size(pages.len(), key_bytes)) {
            return Ok(None);
        }
        self.build_page_fences(split, file, pages, encoder)
            .await
            .map(Some)
    }

    /// Reads `file`'s key columns once for the first key of each of `pages`, and caches the
    /// fences.
    async fn build_page_fences(
        &self,
        split: &Split,
        file: &DataFileMeta,
        pages: Vec<Range<u64>>,
        encoder: &KeyEncoder,
    ) -> Result<Arc<PageFences>, StorageError> {
        let cache = &self.shared().lsm_caches().page_fences;
        // Every row's key, deleted ones included: fences place rows, not live keys.
        let raw = Split {
            deletions: None,
            ..split.clone()
        };
        let mut stream = self.open_data_file(&raw, file, encoder.layout()).await?;
        let mut first_keys = Vec::with_capacity(pages.len());
        let starts: Vec<u64> = pages.iter().map(|p| p.start).collect();
        let mut next = 0;
        let mut position: u64 = 0;
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            let end = position + batch.num_rows() as u64;
            while let Some(&start) = starts.get(next)
                && start < end
            {
                let at = (start - position) as usize;
                let row: Vec<ArrayRef> = batch.columns().iter().map(|c| c.slice(at, 1)).collect();
                first_keys.push(encoder.encode(&row)?.row(0).as_ref().to_vec());
                next += 1;
            }
            position = end;
        }
        if first_keys.len() != pages.len() {
            return Err(StorageError::format(format!(
                "data file {} has {position} rows, its footer places {} pages up to row {}",
                file.file_name,
                pages.len(),
                pages.last().map_or(0, |p| p.end)
            )));
        }
        let fences = Arc::new(PageFences::new(pages, first_keys));
        cache.put(&file.file_name, Arc::clone(&fences), fences.memory_size());
        Ok(fences)
    }
}

#[cfg(test)]
mod tests {
    use super::PageFences;

    fn fences(first: &[&[u8]]) -> PageFences {
        let pages = (0..first.len() as u64)
            .map(|i| i * 10..i * 10 + 10)
            .collect();
        PageFences::new(pages, first.iter().map(|k| k.to_vec()).collect())
    }

    #[test]
    fn a_key_goes_to_the_page_whose_range_holds_it() {
        let f = fences(&[b"b", b"d", b"f"]);
        assert_eq!(f.pages_of(b"a"), 0..0, "before the first key");
        // On a fence: the page before may end with the same key.
        assert_eq!(f.pages_of(b"b"), 0..1);
        assert_eq!(f.pages_of(b"c"), 0..1);
        assert_eq!(f.pages_of(b"d"), 0..2);
        assert_eq!(f.pages_of(b"e"), 1..2);
        assert_eq!(
            f.pages_of(b"z"),
            2..3,
            "after the last fence: the last page"
        );
        assert_eq!(f.page(2), 20..30);
    }

    #[test]
    fn a_key_repeated_across_pages_takes_them_all() {
        let f = fences(&[b"a", b"c", b"c", b"c", b"e"]);
        assert_eq!(f.pages_of(b"c"), 0..4);
        assert_eq!(f.pages_of(b"d"), 3..4);
        assert!(f.memory_size() > PageFences::estimated_size(0, 0));
    }
}
