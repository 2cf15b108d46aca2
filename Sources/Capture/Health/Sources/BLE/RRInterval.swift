/// One beat-to-beat interval as received from a sensor.
public struct RRInterval: Sendable, Equatable {
    public var milliseconds: Double
    /// False when something may lie between it and the interval received before it (the
    /// first after a connection, a notification without skin contact, a dropped
    /// notification the sensor could not resend): no successive difference spans it.
    public var followsPrevious: Bool

    public init(milliseconds: Double, followsPrevious: Bool = true) {
        self.milliseconds = milliseconds
        self.followsPrevious = followsPrevious
    }
}
