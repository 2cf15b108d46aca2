import Foundation

/// How a position was made, as far as its source tells: the record's `location_method`
/// (docs/streams/location.md, "How a fix was made"). Unknown stays nil, never a guess
/// presented as fact: a method inferred from the accuracy alone says so in `basis`.
public struct LocationMethod: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case wifi, ip, cell, gnss, `static`
    }

    /// Where the kind comes from: the source's own word (GeoClue 2.7's `Description`), or
    /// the accuracy alone (GeoClue 2.6 says nothing).
    public enum Basis: String, Sendable {
        case description, accuracy
    }

    public var kind: Kind
    public var basis: Basis

    public init(_ kind: Kind, basis: Basis) {
        self.kind = kind
        self.basis = basis
    }

    /// The text form kept for `status` (`last_method`): the kind, with `?` when inferred.
    public var textForm: String { kind.rawValue + (basis == .accuracy ? "?" : "") }

    public init?(textForm text: String) {
        let inferred = text.hasSuffix("?")
        guard let kind = Kind(rawValue: inferred ? String(text.dropLast()) : text) else { return nil }
        self.init(kind, basis: inferred ? .accuracy : .description)
    }
}
