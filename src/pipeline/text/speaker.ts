/**
 * `Maya: ` at the start of a memory written as `Speaker: text` (chat turns stored one per memory): at most 40
 * characters before the colon, no line break, then whitespace. One pattern for every stage that reads or keeps
 * the label (clip's `speakerLabel`, the sufficiency check and the answer slot, which know the speaker is not the
 * answer, the budget's truncation, which must keep more than the label). No `g`/`y` flag: safe to share.
 */
export const SPEAKER_LABEL = /^[^:\n]{1,40}:\s+/;

/** Anything but whitespace and dots (a cut's "...", a clip's "...", "…"): an emoji says something too. */
const CONTENT = /[^\s.…]/u;

/**
 * Whether `text` says anything besides a speaker label and dots. "Karim: ....." (a truncation that kept only the
 * label and the dots) does not.
 */
export function hasContentBeyondLabel(text: string): boolean {
  const label = SPEAKER_LABEL.exec(text);
  return CONTENT.test(label === null ? text : text.slice(label[0].length));
}
