package manifest

// maxQuoted bounds how much of a rejected value an error message repeats (clip.Bytes).
const maxQuoted = 80
