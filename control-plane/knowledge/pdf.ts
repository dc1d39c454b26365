// The text of a PDF (knowledge-base file items), page by page, with unpdf (PDF.js built for servers; no worker, no
// canvas). Pages are joined as paragraphs so the chunker can cut between them.
import { extractText, getDocumentProxy } from 'unpdf';

/** Whether an upload is a PDF, by its type or its name (the reference validates both; either one is enough here). */
export function isPdf(fileName: string, contentType: string): boolean {
  return contentType.toLowerCase().split(';')[0]!.trim() === 'application/pdf' || /\.pdf$/i.test(fileName);
}

/** The PDF's text and page count; throws with a reason a person can read when the file is not a readable PDF. */
export async function pdfText(bytes: Buffer): Promise<{ text: string; pages: number }> {
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
