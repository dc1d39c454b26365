// The text of a PDF (knowledge-base file items), page by page, with unpdf (PDF.js built for servers; no canvas), read
// on a worker thread (pdf-worker.ts): a large PDF took the main thread for as long as PDF.js ran. Pages are joined as
// paragraphs so the chunker can cut between them.
import { extractText, getDocumentProxy } from 'unpdf';
import { SpeechWorkerPool } from '../../engine/models/worker-pool.js';

/** Whether an upload is a PDF, by its type or its name (the reference validates both; either one is enough here). */
export function isPdf(fileName: string, contentType: string): boolean {
  return contentType.toLowerCase().split(';')[0]!.trim() === 'application/pdf' || /\.pdf$/i.test(fileName);
}

type Read = { text: string; pages: number };

/** One worker, started at the first PDF and idle (unref'd) between them; PDFs wait their turn. */
let pool: SpeechWorkerPool<{ bytes: Uint8Array }, Read | { error: string }> | undefined;

/** The PDF's text and page count, read off the main thread; throws with a reason a person can read when it is not a readable PDF. */
export async function pdfText(bytes: Buffer): Promise<Read> {
  pool ??= new SpeechWorkerPool({ name: 'PDF reader', entry: new URL('./pdf-worker-entry.mjs', import.meta.url), workerData: null, size: 1 });
  const read = await pool.run({ bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
  if ('error' in read) throw new Error(read.error);
  return read;
}

/** As pdfText, on this thread (the worker's). */
export async function readPdf(bytes: Buffer): Promise<Read> {
  if (bytes.subarray(0, 1024).indexOf('%PDF-') < 0) throw new Error('The file is not a PDF (no %PDF- header)');
  let doc: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    doc = await getDocumentProxy(new Uint8Array(bytes));
  } catch (err) {
    throw new Error(`The PDF cannot be read: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    const { totalPages, text } = await extractText(doc, { mergePages: false });
    return { text: text.map((p) => p.trim()).filter(Boolean).join('\n\n'), pages: totalPages };
  } finally {
    await doc.loadingTask.destroy();
  }
}
