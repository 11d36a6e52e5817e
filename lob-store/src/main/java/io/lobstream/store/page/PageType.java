package io.lobstream.store.page;

/** What a page holds. The code is stored in the page header. */
public enum PageType {
    /** Never written, or released; its bytes mean nothing. */
    FREE(0),
    /** First page of a LOB version: length, checksum, page references and the value's inline tail. */
    ROOT(1),
    /** Further page references of a version whose references do not fit in its root page. */
    INDEX(2),
    /** A slice of the value's bytes. */
    DATA(3);

    private final int code;

    PageType(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    public static PageType of(int code) {
        for (PageType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        return null;
    }
}
